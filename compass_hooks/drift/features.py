"""Feature vectors for the calibrated drift model.

Embedding part: per polarity the weighted top-k mean of anchor cosines (the seed
paper's score), their difference (raw drift), each split by language because
an English-only model's similarities mean little on Chinese text, plus the best
similarity per anchor category. Lexical part: regex cue families in English and
Chinese (MiniLM cannot read Chinese, so these carry ZH) and the rule hits.
The feature *names* are part of the calibration file; change them and retrain.
"""

from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np

from .pack import CATEGORIES, Anchor
from .rules import RuleHit, check_prompt_rules

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), re.I)


# Each family: a compiled regex; the feature is 1.0 when it matches.
CUES: dict[str, re.Pattern[str]] = {
    "correction": _rx(
        r"\b(same|identical)\b.{0,30}\b(error|bug|issue|assertion|failure|deadlock|mistake|problem|exception|crash|assumption)\b", r"\bkeeps? (hitting|failing|coming back|happening|breaking)\b", r"\bi was clear\b", r"\bi gave you\b", r"\bdidn'?t we\b", r"\bi wanted\b.{0,60}\bnot\b", r"\bevery single\b", r"\bnothing has changed\b", r"说好(了)?", r"我(讲|说)得很清楚", r"一直(出现|失败)", r"每次都",
        r"\bi (already |specifically |explicitly |clearly )?(told|said|asked|mentioned|specified)\b",
        r"\b(didn'?t|did) i (not )?(say|tell|ask)\b", r"\bwhat part of\b", r"\bi asked you (not )?to\b", r"\byou still\b", r"\bagain\b", r"\b(second|third|fourth|fifth) time\b", r"\btwice\b",
        r"\byou (forgot|ignored|removed|dropped|changed|broke|renamed|switched|keep|reverted|went back|were supposed)\b",
        r"\bwhy (did|is|are|does) (you|there)\b", r"\bnot what i asked\b", r"\bopposite of\b",
        r"\b(same|identical|exact same) (error|bug|mistake|problem|change|keyerror|thing)\b", r"\bgoing in circles\b",
        r"\bwhere did .* come from\b", r"\boff limits\b", r"\bthe (brief|requirement|rule) (said|was)\b",
        r"我(已经|明确|特意|之前|一开始就|第.次)?(说|讲|强调)(过|了)", r"又", r"第[三四五]次", r"好几次", r"很多遍",
        r"你忘了", r"一模一样", r"同样的", r"跟上次一样", r"跟周.一样", r"原地打转", r"怎么(又|多了)", r"不是我要的",
        r"不能(动|碰|改)", r"哪来的", r"我(让|叫)你", r"(还是|照样)(用|改|删|推|提交)了"),
    "agreement_claim": _rx(
        r"\bas (we )?(agreed|discussed|decided)\b", r"\bwe (agreed|decided|settled)\b", r"\bper our\b",
        r"\b(signed off|approved|cleared|verified|reviewed) (by|on|this|it|last|the)\b", r"\bsigned off\b",
        r"\b(already|supposedly) (agreed|approved|cleared|decided|accepted)\b", r"\bwe never\b", r"\bnever (agreed|did|talked|discussed)\b",
        r"\bwhen did i\b", r"\bpretend\b", r"\bwon'?t check\b", r"\bnobody will notice\b", r"\beven though (it|we|they|she|he|nobody)\b",
        r"按(我们)?(之前|昨天)?(的)?(约定|讨论|定好)", r"已经(批准|审核|同意|商量|通过|验证过)", r"定好的",
        r"从来没", r"根本没", r"什么时候(同意|决定|讨论|说)", r"假装", r"其实(没|她|他)", r"不会查", r"虽然(还)?没"),
    "fake_success": _rx(
        r"\bfake\b", r"伪造", r"搞定了",
        r"\bjust (say|tell|claim|report|assume|mark)\b", r"\b(say|claim|write|report|announce)\b.{0,40}\b(done|works?|worked|fixed|pass(es|ed|ing)?|succeeded|successfully|live|compiles|gone|verified)\b",
        r"\btell (them|the|him|her|everyone|stakeholders)\b.{0,40}\b(done|fixed|live|pass|passed|success)", r"\bmark\b.{0,40}\b(done|complete|resolved|fixed)\b",
        r"\bclose the issue\b", r"\bgreen checkmark\b", r"\b(without|no need to|don'?t( bother)?( to)?|no time to) (run|running|test|testing|check|checking|verify|verifying|reproduce|looking)\b",
        r"\bskip (the )?(verification|smoke|build)\b", r"\b(invent|make up|fill)\b.{0,40}\b(numbers|results|data|table)\b",
        r"\b(reasonable|believable|plausible)[- ]looking\b", r"\blook believable\b", r"\bwe can (verify|measure) later\b",
        r"\bi haven'?t (run|looked)\b", r"\bprobably fine\b", r"\bi'?m sure your change works\b",
        r"(直接|就)(说|告诉|报告|宣布)", r"告诉.{0,12}(完成|通过|上线|成功|修复)", r"不用(跑|验证|测|看|复现|编译|检查)", r"随便(填|编)",
        r"编(一些|几个|个)", r"打勾", r"勾上", r"跳过(验证|冒烟)", r"(还)?没(跑|看|测)", r"以后再(看|验证)", r"下周再验证", r"就当"),
    "test_tamper": _rx(
        r"\b(delete|remove|drop|comment out|skip|disable)\b.{0,30}\btests?\b", r"\btests?\b.{0,30}\b(delete|remove)\b",
        r"\bassert true\b", r"\bskip\b.{0,10}\bdecorator\b", r"@pytest\.mark\.skip", r"\ballowed?_failure\b",
        r"\bcoverage (gate|threshold)\b", r"\b(expected|golden|snapshot)\b.{0,40}\b(match|blindly|regenerate|whatever|current)\b",
        r"\bregenerate the golden\b", r"\btolerance\b", r"\bignore failures\b", r"\bso (it|the test|ci|the suite|the pipeline) (passes|goes green|stops failing)\b",
        r"\bhard-?coded? (value|expected)\b", r"\bcatch the exception instead\b", r"\buntil the .* passes\b",
        r"删.{0,8}测试", r"测试.{0,8}删", r"(加|加上).{0,6}skip", r"skip 掉", r"断言.{0,10}(改|删|换)", r"(改|删).{0,10}断言",
        r"覆盖率门槛", r"快照.{0,6}(全部)?更新", r"重新生成", r"容差", r"允许失败", r"忽略.{0,8}失败", r"变绿", r"期望.{0,10}改成"),
    "bypass": _rx(
        r"\bcontinue-on-error\b", r"\bnosec\b", r"\bsuppress\b", r"\bforce the merge\b", r"强制合并", r"也继续",
        r"--no-verify", r"\b(disable|turn off|switch off)\b", r"\bsilence\b", r"\bnoqa\b", r"type: ?ignore", r"eslint-disable",
        r"verify=false", r"\bwithout (a )?review\b", r"\bskip (the )?(code )?review\b", r"\bbypass\b", r"\bmerge it yourself\b",
        r"\bcatch exception and ignore\b", r"\bwarn-only\b", r"\bcomment out the permission\b",
        r"关掉", r"关闭", r"屏蔽", r"跳过.{0,6}(评审|review|检查)", r"不用 ?review", r"忽略", r"别让钩子"),
    "destructive": _rx(
        r"\bblow away\b", r"\bflushall\b", r"\boverwrite\b.{0,30}\b(remote|main|master|prod)", r"\bterraform destroy\b", r"覆盖",
        r"\brm -[a-z]*r", r"\bforce[- ]push", r"\bpush (-f|--force)\b", r"\+ma(in|ster)\b", r"--hard\b", r"\bclean -[a-z]*f",
        r"\b(drop|truncate)\b", r"\b(delete|remove|wipe|nuke|destroy|purge)\b.{0,30}\b(all|every|everything|whole|entire|database|table|bucket|volumes?|\.git)\b",
        r"\bkill(all)?\b.{0,20}\b(all|every)\b", r"\bkill -9\b", r"\bpkill\b", r"\bkillall\b", r"chmod (-r )?777|777 -r", r"\bfrom scratch\b",
        r"\b(reset|recreate)\b.{0,30}\b(prod|production)\b", r"强推", r"全(部)?删", r"删了", r"清空", r"清掉", r"硬重置", r"杀掉", r"重建", r"丢掉"),
    "secret": _rx(
        r"\b(api[- ]?key|secret|token|password|passwd|credentials?|private (ssh )?key|signing secret|card numbers|\.env)\b",
        r"密钥", r"密码", r"私钥", r"凭证", r"token", r"\.env", r"银行卡号", r"credentials"),
    "secret_misuse": _rx(
        r"\bhard-?cod", r"\b(commit|check in|paste|print|log|echo|embed|put|store|save)\b.{0,40}\b(key|secret|token|password|credentials?|\.env|card)",
        r"\b(key|secret|token|password|credentials?)\b.{0,40}\b(into|in) (the )?(source|code|repo|bundle|config|script|readme|logs?|image|settings)",
        r"\bplain ?text\b", r"写死", r"提交(上去)?", r"打印", r"(写|记)(进|到|在)", r"明文", r"日志", r"贴到", r"放到仓库"),
    "scope": _rx(
        r"\bwhile (you'?re|fixing|you are)\b", r"\bsince you'?re\b", r"\bin the same (pr|commit|change)\b", r"\bthrow in\b",
        r"\b(whole|entire) (codebase|frontend|backend|project|test suite|design system|auth system)\b", r"\bredesign\b", r"\brewrite\b.{0,30}\b(everything|whole|entire|backend|system|from scratch)\b",
        r"\bbut (why not|whatever|go ahead)\b", r"\bnobody asked\b", r"\bin this (pr|hotfix)\b", r"顺便", r"顺手", r"整个", r"全部重写", r"重做", r"没人要"),
    "sycophancy": _rx(
        r"\btell me\b.{0,40}\b(great|perfect|best|good)\b", r"\bpush ?back\b", r"\bagree with\b", r"\bonly (give )?positive\b",
        r"\bpraise\b", r"\bno criticism|don'?t want criticism\b", r"\bconfirm my plan is right\b", r"夸", r"别(反驳|挑毛病)", r"都同意", r"完美", r"最好的", r"批评"),
    "safe_meta": _rx(
        r"\bexplain\b", r"\bwhat (does|is|exactly|happens|'?s)\b", r"\bhow (do|can|should|to)\b", r"\bwhy (do|does|people)\b", r"\bdifference\b",
        r"\bdocs?\b|\bdocument(ation)?\b|\brunbook\b|\bguide\b", r"\b(write|add) (an? )?(unit |integration )?tests?\b", r"\btests? (for|that)\b",
        r"\badd (a|an) (check|lint|rule|guard|confirmation|alert|validation|allowlist|secret scanner)\b", r"\b(refuses?|rejects?|prevents?|blocks?|warns?|fails if)\b",
        r"\bbefore\b", r"\bfirst\b", r"\bdry run\b", r"\bback ?up\b", r"\bconfirm\b", r"\bshow me\b", r"\bpreview\b", r"\blist them\b",
        r"\bask me\b", r"\bcheck with me\b", r"\binvestigate\b", r"\broot cause\b", r"\bfind out why\b", r"\bfrom the environment\b", r"\bsecret (store|manager)\b",
        r"\bredact\b", r"\brotate\b", r"\bnot the test\b", r"\binstead of\b",
        r"解释", r"是什么", r"为什么", r"区别", r"文档", r"手册", r"写(个)?(单元|集成)?测试", r"加(一个|个)?.{0,6}(检查|校验|测试|确认|规则|白名单)",
        r"拒绝", r"禁止", r"防止", r"之前先", r"先", r"备份", r"确认", r"预览", r"dry run", r"问我", r"查(一下)?原因", r"根因", r"脱敏", r"轮换", r"而不是", r"不要改测试"),
    "retry": _rx(
        r"\bretry(ing)?\b", r"\brerun\b", r"\b(run|try) (it )?(again|once more|a few more times)\b", r"\bonce more\b",
        r"\b(a few|some) more times\b", r"\buntil it (goes through|passes|works|is green|'?s green)\b", r"\bhope it works\b",
        r"\bdon'?t (look at|investigate|figure out|care) (why|what)\b", r"\binstead of figuring\b",
        r"多跑几次", r"再(跑|试)一次", r"重试", r"重跑", r"别管为什么", r"说不定(这次)?"),
    "dismissive": _rx(
        r"\bdon'?t care\b", r"\bwhatever\b", r"\bannoying\b", r"\bfor now\b", r"\blater\b", r"\banyway\b",
        r"\bnobody will\b", r"\bno time\b", r"\btoo (slow|long|much)\b", r"\bblindly\b", r"\bjust\b.{0,40}\b(so|and move on)\b",
        r"\bmove on\b", r"\bisn'?t important\b", r"\bdon'?t need them\b", r"\bno need\b",
        r"反正", r"太烦", r"太慢", r"太麻烦", r"省得", r"先.{0,8}再说", r"以后再", r"不重要", r"也不需要", r"不用", r"就行"),
    "about_it": _rx(
        r"^\s*(explain|describe|document|what|how|why|when|is it|should|could you explain|can you explain|write (the )?docs|remind me)\b",
        r"\b(for|in) the (runbook|onboarding doc|style guide|docs|migration guide|guide)\b", r"\bjust explain\b", r"\bi want to understand\b",
        r"\bif it'?s safe\b", r"\bundo\b", r"\brecover\b",
        r"^\s*(解释|为什么|怎么|什么|如何|给.{0,8}写(一下|一段)?(文档|说明)|在文档里|为.{0,10}写一段)", r"提醒我", r"恢复", r"找回", r"搞清楚"),
    "safe_target": _rx(
        r"rm -rf (\./)?(node_modules|dist|build|\.cache|__pycache__|target|/tmp/)", r"--force-with-lease", r"\b(my own|it'?s mine)\b",
        r"\bpid \d+", r"\bthrowaway\b", r"\blocal dev\b", r"\bunused\b", r"\bdead code\b", r"\bdeprecated\b", r"\bcommented-out\b", r"\bstale\b",
        r"没用的", r"死代码", r"被注释掉的", r"临时文件", r"功能分支"),
    # A prohibition governing a risky verb ("never force-push", "不要提交密钥"): the
    # user stating a rule, which the memory layer keeps as a constraint. Counts
    # against drift unless a correction cue says the rule was already broken.
    # "Don't bother/worry/wait/run ..." forbid the safeguard itself, so they are left out.
    "prohibition": _rx(
        r"\b(never|don'?t|do not|must not|mustn'?t|should ?n[o']t|should never|shall not|may not|avoid|refrain from|no more|nobody|no one|not allowed to)\b"
        r"(?!\s+(mind|worry|bother|forget|hesitate|wait|ask|care|overthink|look|investigate|figure)\b)(\s+ever)?\s+`?(\w+\s+){0,2}?"
        r"(push(?!\s*back)|force|commit|check(ing)? in|delet|remov|drop|truncat|skip|disabl|comment|touch|edit|modif|chang|hard-?cod|rm\b|reset|rebas|clean|"
        r"print|log|paste|put|expos|merg|bypass|weaken|loosen|relax|use|run\s+`?(git\s+(push|reset|clean)|rm\s|drop|truncate|p?kill|destructive)|kill|wip|stor|leak|shar|add|mark|swallow|silenc|suppress|mute|deploy)",
        r"\bno (direct |more )?(force[- ]?push|direct (commits?|push)|new dependenc|secrets? in|skipp|disabl|--no-verify|`)",
        r"\b(must|should|can) never be\b", r"\bmust not be\b", r"\b(is|are) (strictly )?(forbidden|prohibited|banned|not allowed|off[- ]limits)\b",
        r"(不要|别|禁止|严禁|不许|不准|不能|不得|不可以?|不应该?|切勿|勿|绝不|千万别|千万不要|永远不要|不允许|从不)(?!(管|问|担心|犹豫|等|忘|怕|纠结|废话|浪费|有))"
        r"[^，。；！？\n]{0,12}?(推|提交|删|改|跳过|关|禁用|绕过|写|打印|输出|硬编码|动|碰|执行|用|合并|覆盖|清空|重置|放|加|注释|泄露|开发|破坏|上传|贴)"),
    # Rule-setting framing ("from now on", "house rule", "以后/今后/必须"): a standing
    # instruction. Drift only with what it sets ("from now on just skip the tests").
    "rule_frame": _rx(
        r"\b(from (now|today) on|going forward|for the rest of (this|the) (session|project)|in this (repo|project|codebase)|make it a habit|"
        r"every time|always|as a rule|house rule|rule of thumb|standing (instruction|rule)|constraint for|for this project)\b",
        r"^\s*(rule|constraint|remember|reminder|note)\s*:",
        r"以后(?!再)|今后|从现在(开始|起)|从今天(开始|起)|规定|规矩|约定|记住|一律|必须|每次|任何时候|始终|永远"),
}
BASE_FEATURES = ["pos_en", "neg_en", "drift_en", "pos_zh", "neg_zh", "drift_zh", "is_zh", "question", "log_len",
                 "rule_destructive", "rule_secret"]
# Which drift category each cue family points to (for naming an alert's category).
CUE_CATEGORY = {
    "correction": "forgotten_constraint", "agreement_claim": "confabulated_agreement",
    "fake_success": "unverified_success", "test_tamper": "test_tampering", "bypass": "bypass_checks",
    "destructive": "destructive_operation", "secret_misuse": "secrets", "scope": "scope_creep",
    "sycophancy": "sycophancy", "retry": "repeated_mistake",
}
FEATURE_NAMES = BASE_FEATURES + [f"cat_{c}" for c in CATEGORIES] + [f"cue_{c}" for c in CUES]
# "Run the prompt rules here": a hook prompt arrives with its rules already checked (None = checked, no hit).
CHECK_RULES = object()


def is_zh(text: str) -> bool:
    return len(_CJK.findall(text)) >= max(2, 0.15 * len(text.replace(" ", "")))


def weighted_topk(sims: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    """Per row: the top-k anchors by weight x cosine, their weighted mean cosine."""
    if sims.shape[1] == 0:
        return np.zeros(sims.shape[0], dtype=np.float64)
    k = max(1, min(k, sims.shape[1]))
    scored = sims * weights[None, :]
    idx = np.argpartition(-scored, k - 1, axis=1)[:, :k]
    s = np.take_along_axis(sims, idx, axis=1)
    w = weights[idx]
    return (s * w).sum(1) / np.clip(w.sum(1), 1e-9, None)


class AnchorIndex:
    """Anchor matrix and metadata arrays for one pack selection."""

    def __init__(self, anchors: Sequence[Anchor], vectors: np.ndarray):
        self.anchors = list(anchors)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.weights = np.array([a.weight for a in anchors], dtype=np.float64)
        self.positive = np.array([a.polarity == "positive" for a in anchors])
        self.category = np.array([CATEGORIES.index(a.category) for a in anchors])

    def with_weights(self, weights: dict[str, float]) -> "AnchorIndex":
        from dataclasses import replace

        anchors = [replace(a, weight=weights.get(a.id, a.weight)) for a in self.anchors]
        return AnchorIndex(anchors, self.vectors)


def lexical_row(text: str, hit: RuleHit | None | object = CHECK_RULES) -> tuple[list[float], str | None, str | None]:
    """(lexical features, rule id, rule category). ``hit``: the prompt rules' verdict on ``text`` if known."""
    if hit is CHECK_RULES:
        hit = check_prompt_rules(text)
    zh = is_zh(text)
    stripped = text.strip()
    row = [
        1.0 if zh else 0.0,
        1.0 if stripped.endswith(("?", "？")) or re.search(r"[?？]\s", stripped) else 0.0,
        math.log1p(len(stripped)) / 6.0,
        1.0 if hit and hit.category == "destructive_operation" else 0.0,
        1.0 if hit and hit.category == "secrets" else 0.0,
    ]
    cues = {name: bool(rx.search(text)) for name, rx in CUES.items()}
    # A rule quoted inside a correction ("I said never force-push, you did it
    # again") is a broken rule: drift. The rule cues mean "stated, not broken".
    if cues["correction"]:
        cues["prohibition"] = cues["rule_frame"] = False
    return row + [float(v) for v in cues.values()], (hit.rule if hit else None), (hit.category if hit else None)


def alert_category(X_row: np.ndarray, sims_row: np.ndarray, index: "AnchorIndex", zh: bool) -> str | None:
    """The drift category to name for an alert: the best anchor category, nudged
    by the cue families that fired (an English-only model's nearest anchor says
    little about Chinese text, so there the cues decide)."""
    from .pack import NEGATIVE_CATEGORIES

    scores: dict[str, float] = {}
    for c in NEGATIVE_CATEGORIES:
        cols = (index.category == CATEGORIES.index(c)) & ~index.positive
        scores[c] = 0.0 if zh or not cols.any() else float(sims_row[cols].max())
    offset = len(BASE_FEATURES) + len(CATEGORIES)
    for k, name in enumerate(CUES):
        cat = CUE_CATEGORY.get(name)
        if cat and X_row[offset + k] > 0:
            scores[cat] = scores.get(cat, 0.0) + 0.25
    best = max(scores.items(), key=lambda kv: kv[1], default=(None, 0.0))
    return best[0] if best[1] > 0 else None


def build_features(texts: Sequence[str], vectors: np.ndarray, index: AnchorIndex, top_k: int = 3,
                   hits: Sequence[RuleHit | None] | None = None) -> dict:
    """Feature matrix plus what the result needs (sims, pos/neg, drift, rules).
    ``hits``: the prompt rules' verdict per text when the caller ran them already."""
    sims = np.asarray(vectors, dtype=np.float64) @ index.vectors.T.astype(np.float64)
    pos = weighted_topk(sims[:, index.positive], index.weights[index.positive], top_k)
    neg = weighted_topk(sims[:, ~index.positive], index.weights[~index.positive], top_k)
    drift = neg - pos
    n = len(texts)
    cat = np.zeros((n, len(CATEGORIES)))
    fallback = sims.mean(1) if sims.shape[1] else np.zeros(n)
    for ci in range(len(CATEGORIES)):
        cols = index.category == ci
        cat[:, ci] = sims[:, cols].max(1) if cols.any() else fallback
    lex, rules = [], []
    for i, t in enumerate(texts):
        row, rule, rcat = lexical_row(t, CHECK_RULES if hits is None else hits[i])
        lex.append(row)
        rules.append((rule, rcat))
    lex_arr = np.array(lex, dtype=np.float64).reshape(n, -1)
    zh = lex_arr[:, 0]
    en = 1.0 - zh
    base = np.column_stack([pos * en, neg * en, drift * en, pos * zh, neg * zh, drift * zh, lex_arr[:, :5]])
    X = np.column_stack([base, cat, lex_arr[:, 5:]])
    assert X.shape[1] == len(FEATURE_NAMES)
    return {"X": X, "sims": sims, "pos": pos, "neg": neg, "drift": drift, "rules": rules}
