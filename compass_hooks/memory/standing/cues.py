"""The hand-written half of the standing-instruction detector: where a prompt's sentences are, the cue families
that say a sentence sets (or lifts) a rule for later turns or merely mentions one, the rule's scope when the
user named it, and the subject a rule is about (so a revocation finds the rule it lifts and a newer rule
replaces an older one). English and Chinese. Stdlib only.

The learned half (:mod:`.detect`) weighs these cues together with a text probe; nothing here decides alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

_I = re.IGNORECASE


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(parts), _I)


_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def is_zh(text: str) -> bool:
    return len(_CJK.findall(text)) >= max(2, 0.15 * len(text.replace(" ", "")))


# --------------------------------------------------------------------------- sentences

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
# A line that is code, a log or a config, not prose: indented, a shell prompt, a comment, a keyword start, a
# brace or semicolon ending, a stack trace or a compiler message (a block comment's " * " line is indented; "* item" at
# the line start is a markdown bullet). Rules quoted inside code are never rules.
_CODE_LINE = re.compile(
    r"""^(?:[ \t]{2,}\S|\t)
      | ^\s*(?:\$\s|>>>|\#(?!\#)|//|--\s|/\*|@\w|<\w[^>]*>) | ^\s+\*\s
      | ^\s*(?:def|class|fn|func|function|import|from|return|if|elif|else|for|while|select|case|let|const|var|pub|impl|
             use|package|public|private|static|try|catch|except|raise|assert|guard|SELECT|INSERT|UPDATE|DELETE|CREATE|
             ALTER|DROP|WITH|FROM|WHERE|set\s+-|export|echo|curl|git|npm|pip|docker|kubectl|cargo|go|make)\b[^.!?。！？]*$
      | [{};]\s*$ | ^\s*[}\])]
      | ^\s*(?:Traceback|File\s+"|at\s+[\w.$]+\(|\w+(?:Error|Exception|Warning)\b:?|error(?:\[\w+\])?:|warning:|fatal:|
             WARN|ERROR|INFO|DEBUG|\[(?:ERROR|WARN|INFO)\]|\*\*\*|!\s+\[|✖|~\s)
      | ^\s*[\w.-]+\s*[:=]\s*\S+\s*$ | ^\s*-\s+\w+\s*:\s | =>|==|:=|::|->|\w\(\)\s*\{""",
    re.X,
)
# Sentence ends: . ! ? (plus closing quotes/brackets) before whitespace, CJK 。！？ anywhere; not after the usual
# abbreviations.
_EN_END = re.compile(r"(?<=\S)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\betc)(?<!\bMr)(?<!\bDr)(?<!\bSt)[.!?]+[\"'”’)\]]*(?=\s)")
_ZH_END = re.compile(r"[。！？]+[\"'”’）)」』]*")


@dataclass(frozen=True)
class Unit:
    """One sentence of a prompt: ``text == prompt[start:end]``."""

    start: int
    end: int
    text: str
    index: int  # position among the prompt's units


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    for line in text.splitlines(keepends=True):
        s, e = pos, pos + len(line.rstrip("\r\n"))
        pos += len(line)
        if any(a <= s < b for a, b in fences) or not text[s:e].strip():
            continue
        spans.append((s, e))
    return spans


def _trimmed(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s] in " \t-*•>":
        s += 1
    while e > s and text[e - 1] in " \t":
        e -= 1
    return s, e


def units(text: str, limit: int = 60) -> list[Unit]:
    """The prompt's prose sentences, in order (code, logs and fenced blocks left out), at most ``limit``."""
    lines = _line_spans(text)
    multi = len(lines) > 1
    out: list[Unit] = []
    for ls, le in lines:
        line = text[ls:le]
        if multi and _CODE_LINE.search(line):
            continue
        cuts = {m.end() for m in _EN_END.finditer(line)} | {m.end() for m in _ZH_END.finditer(line)}
        bounds = [0] + sorted(c for c in cuts if 0 < c < len(line)) + [len(line)]
        for a, b in zip(bounds, bounds[1:]):
            s, e = _trimmed(text, ls + a, ls + b)
            if e - s >= 2 and re.search(r"\w", text[s:e]):
                out.append(Unit(s, e, text[s:e], len(out)))
                if len(out) >= limit:
                    return out
    return out


# --------------------------------------------------------------------------- cue families

_LANGS = (r"english|chinese|mandarin|cantonese|french|german|spanish|portuguese|italian|dutch|japanese|korean|"
          r"russian|polish|swedish|arabic|hindi|turkish|latin|british|american")
_REPLY = r"(?:answers?|repl(?:y|ies)|responses?|messages?|explanations?|outputs?|drafts?|emails?|summar(?:y|ies))"
_ZH_LANG = r"(?:中文|英文|英语|汉语|普通话|粤语|繁体|简体|日文|日语|德语|德文|法语|西班牙语|韩语|俄语|双语|文言文)"

# Each family: the feature is 1.0 when its regex matches the sentence.
POSITIVE: dict[str, re.Pattern[str]] = {
    "scope_session": _rx(
        r"\b(?:for|in|during) the (?:rest|remainder) of (?:this|our|the) (?:chat|conversation|session|thread|discussion|planning)",
        r"\b(?:throughout|for|in|during) (?:this|our|the) (?:whole |entire )?(?:chat|conversation|session|thread)\b",
        r"\bfor (?:the|this) (?:whole|entire) (?:session|conversation|chat)\b", r"\b(?:in|for) this chat\b",
        r"\bfor (?:this|the) (?:study|notebook|planning|writing) session\b", r"\btoday\b", r"\bfor everything we do\b",
        r"本次对话|这次对话|这轮对话|整个对话|整段对话|全程|这次(?:聊|复习|分析|规划)|今天(?:聊|写|一起)|剩下的部分|这轮"),
    "scope_project": _rx(
        r"\b(?:in|for|across|throughout) (?:this|the|our) (?:whole |entire )?(?:project|repo(?:sitory)?|codebase|code base|"
        r"crate|workspace|monorepo|service|app|application|module|package|library|warehouse|cluster|tool|frontend|backend)\b",
        r"\bhere\b(?!'s| is| are)", r"\bin this (?:react|django|rails|go|rust|python|node) (?:app|project|service)\b",
        r"(?:这个|本|整个|我们的?)\s*(?:项目|仓库|工程|代码库|服务|模块|集群|crate|repo|workspace)"),
    "scope_global": _rx(
        r"\b(?:in|across|for) (?:every|all|any) (?:project|repo|chat|conversation|codebase)s?\b", r"\beverywhere\b",
        r"\bin general\b", r"\bas a (?:general )?rule\b", r"\bwhatever we(?:'re| are) doing\b", r"\bany(?:where| repo)\b",
        r"\bnot here, not in any\b", r"\bacross the board\b", r"\b(?:every|any|all) (?:chat|conversation)s? we\b",
        r"\bi (?:always )?want\b.{0,40}\bwhatever\b",
        r"不管(?:哪个|什么)(?:项目|仓库|对话)|任何(?:时候|项目|仓库|情况)|所有的?项目|每个项目|长期习惯|一般都希望"),
    "temporal": _rx(
        r"\bfrom (?:now|here|this point|today) on(?:wards?)?\b", r"\bgoing forward\b", r"\bfrom here on\b",
        r"\bhenceforth\b", r"\b(?:until|till|unless) (?:i say otherwise|further notice|i say stop|i tell you otherwise)",
        r"\bin (?:all )?(?:future|later|subsequent) (?:replies|answers|responses|messages|turns)\b", r"\bfrom now\b",
        r"\banymore\b|\bany more\b|\bno longer\b", r"\bfor good\b", r"\bfrom this point\b", r"\bfor the (?:rest|remainder)\b",
        r"\bmoving forward\b", r"\bfrom this (?:message|reply|answer|turn) on\b", r"\b(?:after|from) this one\b",
        r"\beverything after this\b", r"\bwhile we (?:keep talking|talk|work)\b", r"\bfrom here\b",
        r"以后|今后|之后|接下来|从现在(?:开始|起)|往后|后面(?:的|所有|都|每)|从今天(?:开始|起)|直到我说|在我说.{0,4}之前|此后|后续"),
    "every_reply": _rx(
        rf"\b(?:every|each|all|any) (?:of )?(?:your |future |the )?(?:{_REPLY[3:-1]})\b",
        rf"\b(?:your|future) {_REPLY}\b", r"\bwhenever (?:you|i)\b", r"\bevery time\b", r"\beach time\b",
        rf"\b(?:in|to) (?:all |any )?(?:your )?{_REPLY}\b", r"\bin anything you write\b", r"\beverything you write\b",
        r"\bwhen(?:ever)? we (?:talk|chat) about\b", r"(?:聊|讲|谈)[^，。]{1,10}的时候",
        r"每次|每个(?:回答|回复|提交|函数|PR|问题)|所有(?:的)?(?:回答|回复|结果)|回答里|回复里|回答都|回复都|每封|每段|每张|凡是|"
        r"(?:的)?时候[，,]?\s*(?:都|别|不要|请|一律|要|先)"),
    "always_never": _rx(
        r"\balways\b", r"\bnever\b(?! mind)", r"\bever\b", r"\bat all times\b", r"\bno exceptions\b", r"\bfull stop\b",
        r"\b(?:every|each)\b", r"\ball\s+(?:\w+\s+)?(?:changes|code|commits|functions|prs|tests|files|queries|quantities|prices|"
        r"formulas?|comments|manifests|replies|answers|responses|emails|drafts|recipes|new|future|public|your|my)\b",
        r"\bwithout exception\b", r"\bunder no circumstances\b", r"\bonly\b",
        r"\b(?:any|all|every|each)\s+(?:\w+\s+)?(?:files?|functions?|changes?|commits?|commands?|prs?|dependenc(?:y|ies)|"
        r"packages?|tests?|edits?|code|queries|deployments?|manifests?|comments?|scripts?|experiments?|emails?|drafts?|"
        r"recipes?|answers?|replies|responses?|messages?)\b",
        r"一律|统一|永远|始终|都要|都用|都别|都不要|都写|都按|一概|绝对不|任何时候|只(?:用|写|给|输出|能)|必须|务必|一定要|都得|"
        r"每(?:个|次|一|条|张|封|段|篇|份)"),
    "prohibition": _rx(
        r"\b(?:don'?t|do not|never(?! mind)|no more|stop|quit|avoid|refrain from|skip|drop|leave out|cut out|retire|ditch)\b",
        r"^\s*(?:please\s+)?no\s+\w", r"\bwithout (?:asking|telling|checking)\b", r"\b(?:is|are) (?:off[- ]limits|banned|forbidden|not allowed)\b",
        r"\bkeep \S+(?: and \S+)? out of\b", r"\bleave \S+ alone\b", r"\bread-only\b", r"\bnot\b.{0,20}\binstead\b",
        r"\bzero\b", r"\bnothing else\b", r"\bnone of\b",
        r"(?<!要)不要|(?<![特区分类识级告个性差辨派鉴错])别(?![人的处称扭字])|不许|禁止|不准|不得|切勿|勿|不能|少说|去掉|不用(?:加|写|给|带)|避免|不可以"),
    "imperative": re.compile(
        r"^\s*(?:(?:ok(?:ay)?|so|also|and|but|hey|hi|please|pls|kindly|just|actually|again|now)[,!]?\s+)*"
        r"(?:use|keep|write|put|give|stop|avoid|skip|answer|reply|respond|end|begin|start|sign|open|close|finish|include|"
        r"add|run|ask|check|prefer|name|quote|explain|talk|drop|make|be|say|stick|treat|leave|show|label|set|wrap|format|"
        r"limit|cap|switch|change|replace|mix|respect|follow|state|mention|list|number|only|always|never|don'?t|do not|"
        r"no|go easy|cut|tell|remember|assume|let me|refer|spell|favou?r|flag|get rid|call|capitali[sz]e|indent|"
        r"double-check|confirm|avoid|retire|sort|open|lead|structure|tag|mark|group|summari[sz]e|translate)\b",
        _I),
    "polite": _rx(
        r"\bi'?d (?:like|love|prefer|rather|appreciate)\b", r"\bi (?:always |really |just )?(?:want|need|would like|expect)\b",
        r"\bi'?d rather you\b", r"\bi (?:always )?prefer\b", r"\bmy preference is\b", r"\bit would (?:really )?help\b",
        r"\bplease make sure\b", r"\bmake sure (?:to|you|that|every|each|all)\b", r"\bkeep in mind\b", r"\bremember (?:that|to|our)\b",
        r"\bbe sure to\b", r"\bi'?d appreciate\b", r"\bground rules?\b", r"\bhouse rule\b", r"\bas a rule\b",
        r"\bmake a habit of\b", r"照着来|按这个来|照这个来",
        r"请|麻烦|希望你|我想让你|我希望|记得|记住|务必|尽量|规矩|约定|要求"),
    "q_request": _rx(
        r"^\s*(?:(?:ok(?:ay)?|so|hey|also|and)[,]?\s+)?(?:could|can|would|will) you (?:please )?(?:always |kindly )?"
        r"(?:keep|use|stop|avoid|answer|reply|respond|end|start|begin|open|finish|drop|write|put|give|mix|check|list|"
        r"not|include|sign|skip|refrain|make|talk|be|switch|go|leave)\b.*\?\s*$",
        r"\bwould you mind\b", r"\bis it possible for you to\b", r"\bcould you avoid\b", r"\bany chance you could\b",
        r"\bis there any way you could\b", r"\bcan we agree\b", r"\bit would (?:really )?help (?:me )?if\b",
        r"能不能|可以.{0,30}吗|能.{0,20}吗[？?]?$|行吗|好吗[？?]?$"),
    "format": _rx(
        r"\bbold\b", r"\bitalics?\b", r"\bbullet(?:s| points?| lists?)?\b", r"\blists?\b", r"\bmarkdown\b", r"\bheadings?\b",
        r"\bheaders?\b", r"\btables?\b", r"\bcode ?blocks?\b", r"\bfenced\b", r"\bemoji", r"\bplain text\b", r"\bprose\b",
        r"\bparagraphs?\b", r"\bnumber(?:ed)? (?:the )?steps\b", r"\blatex\b", r"\bjson\b", r"\buppercase\b",
        r"\blowercase\b", r"\bformat\b", r"\bsubject line\b", r"\bday-by-day\b", r"\bin grams\b", r"\beuros?\b", r"\bunits?\b",
        r"加粗|粗体|列表|项目符号|表格|标题|代码块|表情|emoji|纯文本|段落|编号|Markdown|LaTeX|JSON|大写|格式|克和毫升|人民币"),
    "length": _rx(
        r"\b(?:under|below|within|at most|max(?:imum)?|no more than|fewer than|less than|up to)\s+(?:about\s+)?\d+",
        r"\b\d+\s*(?:words?|sentences?|lines?|paragraphs?|characters?|chars?|bullets?|steps?)\b",
        r"\b(?:one|two|three|four|five|ten)\s+(?:words?|sentences?|lines?|paragraphs?|steps?)\b",
        r"\b(?:short|shorter|brief|briefer|concise|terse|succinct|compact|long|longer|detailed|thorough)\b",
        r"\b(?:word|length|character) (?:limit|count)\b", r"\bmax\b", r"\bat most\b", r"\bor fewer\b", r"\bessays?\b",
        r"\d+\s*字|字数|(?<!第)[一二三四五六七八九十两百千\d]+\s*(?:句|行|段|字|屏)|简短|短(?:一)?点|精简|篇幅|啰嗦|长篇|详细|压缩"),
    "vocabulary": _rx(
        r"\bthe (?:word|phrase|term|expression)s?\b", r"\bwords? like\b", r"\b(?:say|write|use|call)\s+[\"'“‘]",
        r"[\"'“‘][^\"'“”‘’]{1,40}[\"'”’]\s*(?:,|and|or|as a verb|anymore|in any|from|throughout)",
        r"\bvocabulary\b", r"\bsay \w+, never\b", r"\bwe say\b",
        r"这个词|这种词|这(?:两|几)个词|词语|说法|称呼|字眼|这句|套路|[\"'“‘「][^\"'“”‘’」]{1,12}[\"'”’」]"),
    "language": _rx(
        rf"\b(?:in|into)\s+(?:{_LANGS})\b", rf"\b(?:{_LANGS})\s+(?:spelling|only|please)\b",
        rf"\b(?:switch|go|get|come) back to (?:{_LANGS})\b",
        r"\b(?:reply|respond|answer|write|talk|speak)\s+(?:to me\s+)?in\s+\w+", rf"\bswitch (?:back )?to (?:{_LANGS})\b",
        rf"用{_ZH_LANG}|{_ZH_LANG}(?:回答|回复|写|说)|{_ZH_LANG}"),
    "tool": _rx(
        r"\b(?:instead of|rather than|not|over|in place of)\s+[`\"']?[\w.@/-]+", r"\bstick (?:to|with)\b",
        r"\b(?:only|just)\s+(?:the\s+)?(?:stdlib|standard library|[\w.-]+ (?:for|in))\b", r"\bwe (?:use|test with|say)\b",
        r"\bstandardi[sz]ed on\b", r"\b(?:library|libraries|package|dependenc(?:y|ies)|framework|tool|module|import)s?\b",
        r"\b(?:pandas|numpy|polars|lodash|axios|fetch|moment|jquery|npm|pnpm|yarn|bun|pip|poetry|uv|helm|kustomize|"
        r"pytest|unittest|jest|vitest|click|argparse|httpx|requests|seaborn|matplotlib|tokio|typescript|tailwind)\b",
        r"统一用|改用|只用|别用|不要用|不用|用.{1,16}[，,]\s*(?:别|不要|不)用|标准库|第三方|依赖|引入|框架"),
    "start_end": _rx(
        r"\b(?:start|begin|open|end|finish|close|conclude|sign(?: off)?|wrap up|preface|lead)\b.{0,40}\b(?:each|every|all|your|any)\b",
        r"\b(?:each|every|all|your)\b.{0,30}\b(?:start|begin|open|end|finish|close)\b", r"\bsign (?:each|every|off)\b",
        r"\bat the (?:start|end|top|bottom) of\b", r"\bfollowed by\b",
        r"\b(?:start|begin|open|end|finish|clos)(?:e|es|s|ing)?\s+(?:your |each |every |all |any )?(?:replies|answers|responses|messages|drafts)\b", r"\bfirst,? (?:then|before)\b",
        r"开头|结尾|末尾|落款|收尾|最后(?:都|用|加|附|单独|列)|先给结论|先用一句话|回答前|回答完"),
    "style": _rx(
        r"\btone\b", r"\bformal\b", r"\bcasual\b", r"\bblunt\b", r"\bdirect\b", r"\bgentle\b", r"\bfriendly\b", r"\bwarm\b",
        r"\bjokes?\b", r"\bslang\b", r"\blecture\b", r"\bapologi[sz]e", r"\bas if you were\b", r"\btalk to me like\b",
        r"\bas if i'?m\b", r"\bpersona\b", r"\bfiller\b", r"\bpreamble\b", r"\bpleasantries\b", r"\bsugarcoat|cushion",
        r"\bexclamation\b", r"\bjargon\b", r"\bhint first\b", r"\bquiz me\b", r"\bact as\b", r"\bbe (?:brief|direct|honest|blunt)\b",
        r"语气|正式|客气|随意|扮演|当一个|说话|道歉|客套|废话|玩笑|术语|口语|直接一点|温和|绕弯子|铺垫|说教"),
    "process": _rx(
        r"\bcommits?\b", r"\bpr\b|\bprs\b|\bpull requests?\b", r"\bbranch(?:es)?\b", r"\bchangelog\b", r"\bmerge\b",
        r"\bpush(?:es|ing)?\b", r"\btests?\b", r"\blint", r"\bruff\b|\bmypy\b|\bclippy\b", r"\bmigrations?\b",
        r"\bask (?:me )?(?:first|before)\b", r"\bcheck with me\b", r"\bwait for my\b", r"\bbefore (?:you|writing|deleting|renaming|running)\b",
        r"\bdocstrings?\b", r"\btype (?:hints|annotations)\b", r"\bcomments?\b", r"\bdeploy",
        r"提交|分支|合并|测试|先问我|确认|方案|迁移|注释|类型注解|docstring|PR|推到?\s*main|依赖"),
    # A universal or a ban right before how the assistant works ("一律先写测试", "别再用加粗", "Always type hints
    # in ...", "tests with every change"): terse rules with no time or scope word.
    "work_rule": _rx(
        r"(?:一律|必须|都要|都得|统一|不许|不准|只能|只用|别|(?<!要)不要)[^，。；！？]{0,6}(?:写|改|提交|加|用|跑|带|引入|推|删|装|回答|回复|说)",
        r"^\s*(?:always|never|no|only)\b[^.?!]{0,40}\b(?:in|for|with|on)\b",
        r"\b(?:tests?|type hints|docstrings?|annotations|prs?|commits?) (?:with|on|for) every\b", r"\bno exceptions\b"),
    "revoke": _rx(
        r"\b(?:use|using|add|adding|put|start|go back|switch back|back to)\b.{0,40}\bagain\b", r"\bagain\b.{0,10}\bif you like\b",
        r"\b(?:is|are)\s+(?:fine|ok(?:ay)?|allowed|back)\s+again\b", r"\bfine again\b", r"\bfeel free to\b",
        r"\byou can (?:use|go back|switch back|stop|drop|skip|edit|push|start|write|add|put|bring)\b",
        r"\b(?:don'?t|do not) (?:need|have) to\b.{0,60}\b(?:anymore|any more|no longer)\b",
        r"\bno need to\b.{0,60}\b(?:anymore|any more)\b", r"\bforget (?:the|what i said|about|my)\b",
        r"\bignore (?:the|what i said|my)\b.{0,40}\b(?:limit|rule|from before|earlier|instruction)",
        r"\bnever mind (?:what i said|the|about)\b", r"\b(?:dropping|drop|lift(?:ing|ed)?|scrap|cancel|retire)\b.{0,30}\brule\b",
        r"\brule is (?:lifted|gone|off|over|cancelled)\b", r"\bback to normal\b", r"\ballowed to\b.{0,30}\bagain\b",
        r"\bi don'?t care about\b.{0,30}\banymore\b", r"\b(?:enough of|that's enough)\b", r"\bput .{1,30} back\b",
        r"\bis over\b", r"\bno longer (?:need|have)\b", r"\boptional\b", r"\bis lifted\b", r"\bcan stop\b",
        r"\b(?:is|are|it'?s)\s+(?:fine|ok(?:ay)?|allowed)\b.{0,30}\b(?:now|after all|from here)\b", r"\bafter all\b",
        r"\blift(?:ing)? the\b", r"\btake back\b", r"\b(?:thing|ban|rule|limit|cap|restriction) is off\b", r"\byou can (?:\w+ ){0,2}again\b", r"\bfree to\b", r"\bon the menu\b",
        r"可以用了|可以(?:用|加|改)了|可以.{1,12}了|没关系了|撤了|不用再|不用.{0,12}了|不必再|作废|取消|解除|恢复|忘了吧|结束了|放开|不限制|无所谓了|可以结束"),
    "replace": _rx(
        r"\binstead\b", r"^\s*(?:actually|hmm|scratch that|on second thoughts?|thinking about it|on reflection|"
        r"come to think of it)\b", r"\bchange of plan\b",
        r"\bswitch from\b", r"\bswitch (?:the|your) \w+ to\b", r"\bmake it\b", r"\blet'?s say\b", r"\bscratch\b", r"\breplace\b.{0,40}\bwith\b",
        r"\bupdate to\b", r"\bnew .{0,20}\b(?:scheme|rule|style|convention)\b", r"\bchanged our minds?\b",
        r"\bless .{1,20} than i asked\b", r"\btoo (?:tight|strict|long|short|much)\b", r"\bswitch the\b",
        r"改成|换成|改用|放宽|先不用了|还是可以|不用那么|规则改", r"^\s*算了[，,].{0,30}(?:以后|改成|换成|还是|直接)"),
    "restated": _rx(
        r"\bi (?:already |just )?(?:said|told you|asked you)\b", r"\blike i said\b", r"\bagain\b", r"\b(?:second|third|fourth) time\b",
        r"\bhow many times\b", r"\bi said (?:that )?at the start\b",
        r"说了|说过|又|说好了|多少遍|好几次|一开始就说"),
}

NEGATIVE: dict[str, re.Pattern[str]] = {
    "one_off": _rx(
        r"\b(?:for |in )?this one\b", r"\bjust this once\b", r"\bthis time\b", r"\bfor now\b", r"\b(?:just|only) for this\b",
        r"\bthis (?:answer|email|message|paragraph|sentence|recipe|chart|leg|diff|pr|function|letter|post|cell|query|heatmap|"
        r"snippet|draft|reply|question|line|file|list|cover letter|slack message|intro|section|part|word|test|bug)\b(?! (?:going forward|from now))",
        r"\bthat (?:last )?(?:answer|explanation|reply|response|one)\b", r"\b(?:below|above)\b", r"\bthe (?:paragraph|text|code|result) (?:below|above)\b",
        r"\bonly this\b", r"\bhere,? (?:a|the|it)\b", r"\b(?:it|that|this|them)\s+(?:again|shorter|longer|simpler|clearer|"
        r"better|smaller|bigger|faster|cleaner)\b", r"\bthe other (?:one|file|function|branch)\b",
        r"\byet\b", r"\bthere (?:instead|too|as well)\b", r"\bdon'?t bother\b",
        r"\b(?:on|in|for|to) that (?:helper|function|file|test|class|method|line|query|one|component|endpoint|branch|pr)\b", r"\bit'?s (?:just )?(?:a |only )?(?:throwaway|test|quick)\b", r"\bquick (?:test|look)\b",
        r"这次(?!对话|复习|分析|聊|规划|旅行|改稿)|这回|这一次|这段|这一段|这条|这封|这道|这张|这里|这个(?:菜谱|问题|回答|老|地方)|刚才(?:那个)?|先.{0,8}(?:一下|顶上|救火)|就这一|这几个|回头补"),
    "q_about": _rx(
        r"^\s*(?:is|are|should|shall|does|did|do you think|what|why|how|which|when|who|where|would it|is it|isn'?t)\b[^\n]*\?",
        r"\bpros and cons\b", r"\bworth (?:it|the)\b", r"\breasonable\b", r"\bgood idea\b", r"\bmake sense\b", r"\bbest practice\b",
        r"\bor (?:is that|just|would that)\b", r"\bdo you think\b", r"\bwhat do you think\b", r"\bdebating\b", r"\bcommon\b.{0,30}\?",
        r"是不是|好还是|要不要|有没有必要|值得|该不该|合理吗|好吗|还是.{1,12}(?:好|比较好)|你觉得|会不会|有必要吗|吗[？?]\s*$"),
    "reported": _rx(
        r"(?:\b(?:he|she|they|someone|somebody|people|everyone|nobody)\b|\b(?:my|our|the|a|his|her|their)\s+[\w -]{1,30}?|"
        r"(?-i:\b[A-Z][A-Za-z]+))\s+(?:always |keeps |also |just |even )?(?:(?:says?|said|saying|told me|tells|insists?|wrote|"
        r"writes|claims?|recommends?|swears|mentioned)\b|(?:wants|thinks|believes)\s*(?:that\b|[\"'“:]))",
        r"\baccording to\b", r"\b(?:the|our|my|their) (?:readme|guide|guidebook|book|linter|wiki|runbook|policy|docs?|style guide|"
        r"contributing guide|guidelines|manager|boss|lead|tech lead|cto|dba|doctor|friend|mum|mom|teacher|advisor|"
        r"colleague|coworker|team|reviewer|chef|hr|security team|platform team)\b",
        r"\bsomeone (?:on|at|in)\b", r"\b(?:pep ?8|clean code|uncle bob)\b", r"\bwarning from\b", r"\bsays:", r"\bwrote:",
        r"说[\"'“‘\"：:]|说过[\"'“]|说了(?:一)?句|写着|规范(?:里|说|写)|强调|下了通知|文章说|攻略|导师|老板|领导|组长|同事|我妈|群里有人|有人说|公众号|掘金|教程|leader|规定[\"'“]"),
    "hypothetical": _rx(
        r"(?<!\bas )\bif (?:i|we|you) (?:asked|said|told|wanted|banned|forbade|never|only|could|were)\b", r"\bsuppose\b", r"\bimagine\b",
        r"\bwhat if\b", r"\bsay i (?:asked|wanted|said)\b", r"\bhypothetically\b", r"\bwould you (?:still|actually|stay)\b",
        r"\bcould you still\b", r"\bwhat would (?:happen|you do)\b", r"\bif the rule were\b",
        r"如果|假如|要是|假设|打个比方|真要是|万一"),
    "past": _rx(
        r"\bused to\b", r"\bback when\b", r"\bat my (?:previous|old|last)\b", r"\blast (?:year|week|month)\b", r"\byesterday\b",
        r"\bwhen i (?:was|lived|worked|started)\b", r"\bin school\b", r"\bbefore (?:this job|i found)\b", r"\b(?:my|our) old\b",
        r"\b(?:i|we) (?:always|never) (?:wrote|used|signed|ran|had|took|memori[sz]ed|forgot|added|told|rented|normali[sz]ed|set)\b",
        r"\b(?:i|we) (?:force-pushed|squashed|switched|stopped)\b", r"\bonce in \d{4}\b", r"\bgrandmother|grandma\b",
        r"\b(?:i|we) always forget\b", r"\bwent by\b", r"\bearlier today you\b", r"\bwhen we started\b",
        r"\b(?:our|my) previous\b", r"\bback in (?:university|college|school|the day)\b", r"\b(?:they|he|she|you) refused\b",
        r"\bwe were\b", r"\bwere in\b",
        r"以前|昨天|前几天|上次|之前(?:我|在|我们)|那会儿|那几年|前年|去年|上个(?:项目|月)|当时|小时候|刚(?:入职|毕业|工作)|从来没|后来|上周|我姥姥|老项目里|老集群"),
    "code": re.compile(r"`[^`]*`|[{}]|\(\)\s*[{:]|^\s*(?:\$|>>>)|\b(?:def|fn|func) \w+\(|=>|==|!=|\w+\.\w+\(|\berror\b:|\[\w+\]|"
                       r"\bassert\s+\w+|\bis not None\b|\bNone\b|\bnull\b|\w+\(\w*\)", _I),
    "task": _rx(
        r"^\s*(?:please\s+)?(?:write|create|make|build|set up|implement|generate|plan|suggest|design|draft|code|add|give me|"
        r"i need|i want)\s+(?:me\s+)?(?:a|an|the|some)\s+[\w /-]{1,40}?\s+(?:that|which|where|to|so|whose|for)\b",
        r"\b(?:the|this|a) (?:chart|button|probe|view|function|query|hook|job|cron|endpoint|middleware|decorator|helper|"
        r"validator|wrapper|script|loop|singleton|service|form|page|api)\b.{0,30}\b(?:should|must|always|never|every)\b",
        r"\bmake (?:the|this|sure every (?:api|line|response|card))\b", r"\bhow do i\b", r"\bhow (?:can|should) (?:i|we)\b",
        r"写(?:个|一个)|怎么(?:写|做|设置|实现|处理|办|弄)|用什么[^，。]*[？?]|帮我(?:写|排|规划|做|把)|如何|应该放在",
        r"帮我.{0,20}(?:一下|吧)?[。！？]?$", r"\b(?:can you |please )?update (?:it|them|the \w+|this)\b(?! rule)"),
    # A one-off request: a sentence that opens on an action on something at hand ("Write the apology email in a
    # formal tone", "Tell me a joke"). Rules open on verbs too ("Use pnpm"), so this only weighs against.
    "action": _rx(
        r"^\s*(?:(?:ok(?:ay)?|so|also|and|now|then|hey|hi|please|pls|can you|could you|first)[,!]?\s+)*(?:write|draft|translate|"
        r"rewrite|summari[sz]e|explain|describe|tell me|show me|fix|rename|refactor|convert|replace|review|debug|implement|"
        r"fit|plot|scale|compute|calculate|find|plan|recommend|suggest|create|generate|build|open|push|deploy|merge|delete|"
        r"remove|install|reply to|respond to|sign this|make this|turn this|format (?:this|that)|add (?:a|an|the|some))\b",
        r"^\s*(?:帮我|给我|把|请帮|麻烦帮|写一|翻译|解释|总结|推荐|讲讲|说说|列一下|算一下|改一下)"),
    # Correcting what was just done ("no, I said the other file", "that's wrong, revert it"): about one change,
    # not a rule for later (a restated rule says the rule again: "I said pnpm! Never npm in this repo").
    "correction": _rx(
        r"^\s*no[,.!]\s", r"\bthat'?s (?:wrong|not (?:it|right|what))\b", r"\b(?:revert|undo|roll back)\b", r"\bwrong (?:file|one|place)\b",
        r"\bnever mind\b", r"\bit works now\b", r"不对|错了|不是这个|撤销|改回去|算了(?![，,].{0,30}(?:以后|改成|换成|还是|直接))"),
    # A definite reference to one thing at hand ("instead of the assert", "this loop"): a change to it, not a rule.
    "specific": _rx(
        r"\b(?:the|this|that|these|those)\s+(?:assert(?:ion)?|function|line|loop|variable|bug|error|button|component|"
        r"endpoint|snippet|regex|query|method|class|paragraph|sentence|email|message|chart|table|patch|"
        r"page|form|field|column|row|cell|slide|draft|letter|post|document|screenshot|output|result|log)s?\b(?!\s+(?:you|we|i)\b)",
        r"(?:这个|那个|这段|那段|这条|这张|这份)(?:函数|变量|按钮|组件|接口|正则|查询|报错|错误|页面|表单|字段|图|表|邮件|消息|文案|代码)"),
    # A proposal to do something now ("Let's clean up the fixtures in this repo", "咱们把...改名"): a task, even
    # with a scope word in it ("let's use / stick with / agree" set something, and stay out).
    "proposal": _rx(
        r"^\s*(?:(?:ok(?:ay)?|so|now|today|alright|right)[,!]?\s+)*let'?s\s+(?!(?:use|stick|keep|agree|always|never|not|"
        r"avoid|switch|say|go with|make it|drop|skip|stop|write all|only)\b)\w+",
        r"^\s*(?:我们|咱们)(?:先|来|今天)?(?:把|来|先)", r"^\s*今天(?:主要|先|想)"),
    # A statement of how things are (the API, the service, the user's week), not a request to the assistant:
    # "From now on the API returns 404 for missing users", "For the rest of the week I'm on call".
    "fact": _rx(
        r"\b(?:the|this|our)\s+(?:api|service|endpoint|app|site|config|ci|cron|team|tests?)\s+(?:returns?|is|are|uses?|runs?|"
        r"loads?|has|lives?|live)\b", r"\bi'?m (?:on call|training|going to be|moving|travel)", r"\bthe team is\b",
        r"(?:团队|公司|我们)(?:已经|现在)?(?:改用|换成|换用)[^，。]{1,20}了"),
    # How a thing being built behaves ("the modal should always close on Escape", "弹窗按 Esc 的时候一律关闭"):
    # a spec for the code, not a rule for the assistant.
    "behaviour": _rx(
        r"(?:弹窗|窗口|账号|用户|接口|请求|按钮|页面|导出|定时任务|提示条|输入框|重试|超时|健康检查|组件|探针|状态|数据|表单|金额|价格|"
        r"手机号|卡号|Excel|CSV)[^，。；！？]{0,12}(?:一律|永远|每次|都要|必须|都)",
        r"\b(?:the|this|each|every)\s+(?:modal|button|request|row|cron|job|retry|health check|endpoint|api|page|window|field|"
        r"user|account|script|parser|function|query|column)\b[^.?!]{0,40}\b(?:always|never|must|should|every)\b"),
    # A rule inside quotation marks (a system prompt, a linter, someone's requirement): quoted, not the user's.
    "quoted_rule": _rx(
        r"[\"“「][^\"”」]{0,200}(?:\balways\b|\bnever\b|\bonly\b|\bmust\b|\bdon'?t\b|\bdo not\b|不要|必须|不许|一律|别|不能|只用)"
        r"[^\"”」]{0,200}[\"”」]"),
    "meta": _rx(
        r"\bdo you (?:remember|keep|have|store|retain)\b", r"\bcan you (?:remember|enforce|keep track|actually|change your)\b",
        r"\bhow do you (?:decide|choose|know)\b", r"\bwhat happens\b", r"\bare you able\b", r"\byour (?:memory|personality)\b",
        r"\bwhere is it stored\b", r"\bsystem prompt\b", r"\blanguage models?\b", r"\bbetween chats\b",
        r"你(?:会|能)记得|你是怎么|你们?(?:这种)?模型|记忆|你那边|你这边|你们 AI|为什么你|系统提示|你能感知"),
}


# --------------------------------------------------------------------------- lexicon files

LEXICON = Path(__file__).resolve().parent / "lexicon"
_HEADER = re.compile(r"\[([a-z_]+)\]")


def read_lexicon(folder: Path = LEXICON) -> dict[str, list[str]]:
    """Patterns per family from the lexicon files (``lexicon/<lang>.txt``, in name order): one regular expression
    a line under a ``[family]`` header, ``#`` comments. Phrasings live there, per language, rather than in code."""
    out: dict[str, list[str]] = {}
    for path in sorted(Path(folder).glob("*.txt")):
        family = None
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            header = _HEADER.fullmatch(text)
            if header:
                family = header.group(1)
                continue
            if family is None:
                raise ValueError(f"{path}:{n}: a pattern before any [family] header")
            try:
                re.compile(text)
            except re.error as exc:
                raise ValueError(f"{path}:{n}: {exc}") from None
            out.setdefault(family, []).append(text)
    return out


def _extend(families: dict[str, re.Pattern[str]], lexicon: dict[str, list[str]]) -> None:
    for name, patterns in lexicon.items():
        if name in families:
            old = families[name]
            families[name] = re.compile("|".join([old.pattern, *patterns]), old.flags)


_LEXICON = read_lexicon()
_extend(POSITIVE, _LEXICON)
_extend(NEGATIVE, _LEXICON)
# Families only the lexicon has: positive features of their own, in name order; they frame a sentence as holding
# for later turns (a default, a condition on later prompts, a standing preference, a labelled rule).
LEXICON_FAMILIES = sorted(n for n in _LEXICON if n not in POSITIVE and n not in NEGATIVE)
POSITIVE.update({n: _rx(*_LEXICON[n]) for n in LEXICON_FAMILIES})

CUE_NAMES = list(POSITIVE) + list(NEGATIVE)
OTHER_FEATURES = ["question", "is_zh", "log_len", "log_units", "first", "prompt_code", "prompt_question_only",
                  "n_positive_cues", "content_cues", "framing_cues", "negated", "cues_despite_negation", "bare"]
FEATURE_NAMES = CUE_NAMES + OTHER_FEATURES

# What a rule is about (its content) as opposed to how it is framed (scope, time, politeness).
_CONTENT = ("format", "length", "vocabulary", "language", "tool", "start_end", "style", "process", "prohibition")
_FRAMING = ("scope_session", "scope_project", "scope_global", "temporal", "every_reply", "always_never", "polite",
            "q_request", "imperative", "revoke", "replace", "restated", *LEXICON_FAMILIES)
_QUESTION = re.compile(r"[?？]\s*[\"'”’)]*\s*$")
_PROMPT_CODE = re.compile(r"```|\n\s{2,}\S|\n\s*(?:\$|>>>|#|//)|Traceback|\berror\b[:\[]|\{\s*\n", _I)


# Typos in the words the cue families key on ("alwyas", "answrs", "evrey reply") made a rule lose every cue it
# had (form-robustness harness, compass_eval/standing_forms.py: recall 0.77 with two typos in the rule). Before the
# cues are matched, a word that is one typing slip away from one of these (two neighbouring letters swapped, an
# inner letter dropped or doubled; never the first letter) is read as that word, unless the slip is itself a word
# of the dev set (a real word: "relies" is not "replies").
_CUE_WORDS = (
    "always", "never", "every", "everything", "anything", "answer", "answers", "reply", "replies", "response",
    "responses", "please", "forward", "onwards", "anymore", "bullet", "bullets", "emoji", "emojis", "markdown",
    "english", "chinese", "sentence", "sentences", "paragraph", "paragraphs", "words", "explain", "explanation",
    "explanations", "instead", "unless", "whenever", "without", "conversation", "session", "project", "default",
    "prefer", "format", "formatting", "headers", "headings", "summary", "shorter", "concise",
    "language", "spelling", "comments", "message", "messages", "until", "otherwise", "remember", "throughout",
    "repository", "future", "should", "mention", "include", "write", "start", "begin", "finish", "bold", "italics",
    "brief", "using", "written")
# Slips that are words of their own, whether or not the dev set has them.
_REAL_WORDS = frozenset(("relies", "selling", "avid", "eery", "tales", "util", "sorter", "pease", "sop", "stat", "bod"))


def _slips(word: str) -> set[str]:
    out = set()
    for i in range(1, len(word) - 1):
        out.add(word[:i] + word[i + 1:])  # an inner letter dropped
        out.add(word[:i] + word[i] + word[i:])  # doubled
    for i in range(1, len(word) - 1):
        out.add(word[:i] + word[i + 1] + word[i] + word[i + 2:])  # neighbours swapped
    out.add(word[:-1] + word[-1] + word[-1])
    return out


def _slip_map() -> dict[str, str]:
    seen: set[str] = set(_REAL_WORDS)
    for path in sorted((Path(__file__).resolve().parent / "data").glob("detect_dev*.jsonl")):
        try:
            seen.update(w.lower() for w in re.findall(r"[A-Za-z]+", path.read_text(encoding="utf-8")))
        except OSError:
            pass
    out: dict[str, str] = {}
    for word in _CUE_WORDS:
        for slip in _slips(word):
            if len(slip) >= 3 and slip != word and slip not in seen and slip not in _CUE_WORDS:
                out[slip] = word
    return out


_SLIPS: dict[str, str] | None = None
_WORD = re.compile(r"[A-Za-z]{3,}")


def normalise(text: str) -> str:
    """``text`` with typing slips in cue words undone (for the cue families only; offsets are not kept)."""
    global _SLIPS
    if _SLIPS is None:
        _SLIPS = _slip_map()
    slips = _SLIPS
    return _WORD.sub(lambda m: slips.get(m.group(0).lower(), m.group(0)), text)


def cue_hits(text: str) -> dict[str, bool]:
    text = normalise(text)
    return {name: bool(rx.search(text)) for name, rx in {**POSITIVE, **NEGATIVE}.items()}


_NEGATING = ("one_off", "q_about", "reported", "hypothetical", "past", "task", "meta", "code", "action", "correction",
             "specific", "proposal", "fact", "quoted_rule", "behaviour")
# What makes a sentence a rule for later rather than a request for now: a time or scope, a universal ("every",
# "always", "never"), a restated or lifted rule, or a subject that only makes sense as standing (how replies
# look, sound or are worded). A sentence with none of these ("just force push to main and skip the tests") is
# "bare".
_GENERAL = ("temporal", "scope_session", "scope_project", "scope_global", "every_reply", "always_never", "restated",
            "revoke", "replace", "format", "length", "vocabulary", "language", "start_end", "style", *LEXICON_FAMILIES)


def plain_question(text: str) -> bool:
    """A question that is not a request ("Could you answer in Dutch from now on?" asks for a rule)."""
    return bool(_QUESTION.search(text)) and not POSITIVE["q_request"].search(text)


def inside_quote(unit: Unit, prompt: str) -> bool:
    """Whether ``unit`` starts inside quotation marks opened earlier on its line (a quoted system prompt or
    requirement split into sentences: 'Never use emojis."' is the quote's second sentence, not the user's rule)."""
    line = prompt[prompt.rfind("\n", 0, unit.start) + 1: unit.start]
    return line.count('"') % 2 == 1 or line.count("“") > line.count("”") or line.count("「") > line.count("」")


def features(unit: Unit, prompt: str, n_units: int) -> list[float]:
    """One row of :data:`FEATURE_NAMES` for ``unit`` of ``prompt``."""
    hits = cue_hits(unit.text)
    hits["quoted_rule"] = hits["quoted_rule"] or inside_quote(unit, prompt)
    question = plain_question(unit.text)
    content = sum(hits[c] for c in _CONTENT)
    framing = sum(hits[c] for c in _FRAMING)
    positive = sum(hits[n] for n in POSITIVE)
    negated = any(hits[n] for n in _NEGATING) or question
    only_q = all(plain_question(u) for u in re.split(r"(?<=[.!?。！？])\s*", prompt.strip()) if u.strip())
    row = [float(hits[n]) for n in CUE_NAMES]
    # The last two let a linear model say "rule cues, but in a question / a quote / a one-off" (an interaction).
    row += [float(question), float(is_zh(unit.text)), math.log1p(len(unit.text)) / 6.0, math.log1p(n_units) / 3.0,
            float(unit.index == 0), float(bool(_PROMPT_CODE.search(prompt))), float(only_q),
            positive / 5.0, content / 3.0, framing / 3.0, float(negated), positive / 5.0 * float(negated),
            float(not any(hits[n] for n in _GENERAL))]
    return row


# --------------------------------------------------------------------------- rule text, scope, subject

_PREFACE_SEP = re.compile(r"(?::\s+|：|\s+—\s+|\s+--\s+|，|,\s+)")
_PREFACE_TALK = _rx(
    r"\bheads up\b", r"\bsay it again\b", r"\bbefore we (?:start|dive in|begin)\b", r"\bi told you\b", r"\bi said\b",
    r"\breminder\b", r"\bnote\b", r"\bimportant\b", r"\blisten\b", r"\bonce more\b", r"\bcontext first\b", r"\bone thing\b",
    r"\bfyi\b", r"\bquick (?:thing|note)\b", r"\bby the way\b", r"\bbtw\b", r"\bbefore we get (?:into|started)\b",
    r"\bsmall favou?r\b", r"\bbefore the (?:real|actual|first) question\b", r"\bbefore anything else\b", r"\bneed both languages\b", r"\bhey\b",
    r"说过|说了|又来了|多少遍|好几次|先把规矩说清楚|再说一遍|提醒一下|对了|顺便说|先说(?:一下|一句|好)")


def trim_preface(text: str) -> int:
    """How many leading characters of a rule sentence are a preface to drop ("Quick heads up before we start:",
    "Hey, before we dive in —"): talk about the rule with no scope or content of its own, followed by the rule.
    The longest such preface wins, each of its parts talk itself: "Quick request before we start: give distances
    in kilometres, not miles, ..." drops the first part only (the part after it is the rule). 0 keeps the
    sentence whole."""
    cut = 0
    for m in _PREFACE_SEP.finditer(text):
        left, right = text[: m.start()], text[m.end():]
        if len(left) > 80 or len(right) < 4:
            break
        lh, rh = cue_hits(left), cue_hits(right)
        if any(lh[c] for c in _CONTENT + ("scope_session", "scope_project", "scope_global", "temporal", "revoke",
                                          "replace", "every_reply")):
            break  # the left part already says something about the rule: it is part of it
        right_says = any(rh[c] for c in _CONTENT) or rh["always_never"] or rh["imperative"] or rh["q_request"]
        if not (right_says and _PREFACE_TALK.search(text[cut: m.start()])):
            break  # this part is not talk about the rule: the rule starts at the last cut
        cut = m.end()
    return cut


# "Everywhere" / "anywhere" mean every project only when no narrower scope is named ("anywhere in this repo",
# "anywhere in your answers for the rest of this chat").
_WEAK_GLOBAL = re.compile(r"\b(?:everywhere|anywhere)\b|任何(?:时候|情况)", _I)


def explicit_scope(text: str) -> str | None:
    """The scope the user named: every project, this session or this project (a named project or session wins
    over a bare "everywhere"), or None when the sentence names none."""
    strong_global = POSITIVE["scope_global"].search(_WEAK_GLOBAL.sub("", text))
    if strong_global:
        return "global"
    if POSITIVE["scope_session"].search(text):
        return "session"
    if POSITIVE["scope_project"].search(re.sub(r"\bhere\b", "", text, flags=_I)):
        return "project"
    if _WEAK_GLOBAL.search(text):
        return "global"
    return None


# Subjects: normalised keys a rule and the revocation or newer rule that changes it share. How replies look,
# sound or are worded come first (they are what a sentence is about when it names one), then quoted words and
# named libraries, then the work subjects, specific before generic ("new dependencies" before "asking before
# changes").
_STYLE_SUBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("reply ending", _rx(r"\b(?:ends?|finish(?:es)?|close[sd]?|conclude[sd]?|sign(?:s)?(?: off)?|wrap up)\b.{0,40}\b(?:each|every|all|your|"
                         r"answers?|repl|responses?|drafts?)\b",
                         r"\b(?:each|every|all|your) (?:answers?|repl(?:y|ies)|responses?|drafts?) (?:ends?|finish(?:es)?|close[sd]?)\b",
                         r"\btl;?dr\b", r"\bsign (?:each|every)\b", r"\bat the end\b", r"\bnext step:", r"\bsummary at the end\b",
                         r"结尾|末尾|落款|收尾|最后(?:都|用|加|附|单独|列)|回答完")),
    ("reply opening", _rx(r"\b(?:starts?|begins?|opens?|leads?|preface[sd]?)\b.{0,40}\b(?:each|every|all|your|answers?|repl|responses?)\b",
                          r"\b(?:each|every)\b.{0,20}\b(?:answer|reply|response)\b.{0,20}\b(?:start|begin|open)\b", r"\bconfidence rating\b",
                          r"开头|先给结论|先用一句话|回答前|把握程度")),
    ("language of code comments", _rx(r"\bcomments?\b.{0,40}\b(?:in\s+(?:" + _LANGS + r"))\b", r"注释.{0,12}" + _ZH_LANG + r"|注释改成")),
    ("language of commit messages", _rx(r"\bcommit messages?\b.{0,30}\bin\s+(?:" + _LANGS + r")\b", r"提交信息.{0,20}" + _ZH_LANG)),
    ("language of replies", _rx(rf"\b(?:reply|respond|answer|write|talk|speak|replies|answers)\b.{{0,30}}\b(?:in|into)\s+(?:{_LANGS})\b",
                                rf"\b(?:switch|go|get|come) back (?:from \w+ )?to (?:{_LANGS})\b", rf"\bback to (?:{_LANGS})\b",
                                rf"\bswitch (?:from \w+ )?to (?:{_LANGS})\b", rf"\b(?:{_LANGS})\s+(?:only|for the rest)\b",
                                r"\b(?:reply|answer|response)s? language\b", rf"\blanguage\b.{{0,20}}\b(?:{_LANGS})\b",
                                rf"(?:用|改用|换成){_ZH_LANG}(?:回答|回复|说|写)?|{_ZH_LANG}(?:回答|回复)|(?:说|讲|回){_ZH_LANG}|回答主体用|语言")),
    ("spelling variant", _rx(r"\b(?:british|american|us|uk)(?: english)? spelling\b", r"\b(?:british|american) english\b")),
    ("answer length", _rx(r"\b\d+\s*-?\s*(?:words?|sentences?|lines?|paragraphs?|characters?)\b",
                          r"\b(?:one|two|three|four|five|ten)\s+(?:words?|sentences?|lines?|paragraphs?)\b",
                          r"\bword (?:limit|count)\b", r"\blength\b", r"\b(?:short|shorter|brief|concise|long|longer)\b.{0,20}\b(?:answers?|replies|responses|explanations?)\b",
                          r"\b(?:answers?|replies|responses|explanations?)\b.{0,20}\b(?:short|shorter|brief|concise|long)\b", r"\bbe brief\b",
                          r"\bshorter answers\b", r"\bparagraph at most\b", r"\bessays\b",
                          r"\d+\s*字|[一二三四五六七八九十两百千]+字|字数|[一二三四五六七八九十两\d]+\s*(?:句话|行|段)|简短|短(?:一)?点|精简|篇幅|一屏|长篇")),
    ("bold", _rx(r"\bbold\b", r"加粗|粗体")),
    ("headings", _rx(r"\bheadings?\b", r"\bheaders\b", r"标题")),
    ("tables", _rx(r"\btables?\b", r"表格")),
    ("bullet lists", _rx(r"\bbullet", r"(?<!\bjust )(?<!\bto )\blists?\b(?! (?:them|the|of|all|out|it|every)\b)",
                         r"列表|项目符号")),
    ("numbered steps", _rx(r"\bnumber(?:ed)? (?:the )?steps\b", r"\bnumbered\b", r"编号")),
    ("markdown", _rx(r"\bmarkdown\b", r"\bplain text\b", r"Markdown|纯文本")),
    ("code blocks", _rx(r"\bcode ?blocks?\b", r"\bfenced\b", r"\bcode only\b", r"代码块|只给代码")),
    ("emojis", _rx(r"\bemoji", r"表情|emoji")),
    ("tone", _rx(r"\btone\b", r"\bformal\b", r"\bcasual\b", r"\bblunt\b", r"\bgentle\b", r"\bfriendly\b", r"\btalk to me like\b",
                 r"语气|正式|客气|温和|直接一点|说话")),
    ("persona", _rx(r"\bas if you were\b", r"\bact as\b", r"\bpersona\b", r"\b(?:grumpy|pirate)\b", r"\bact\b", r"扮演|当一个|角色")),
    ("jokes", _rx(r"\bjokes?\b", r"玩笑")),
    ("apologies", _rx(r"\bapologi[sz]", r"道歉")),
    ("filler", _rx(r"\bfiller\b", r"\bpreamble\b", r"\bpleasantries\b", r"客套|废话|铺垫")),
    ("exclamation marks", _rx(r"\bexclamation")),
    ("explanation level", _rx(r"\bas if i'?m \d+\b", r"\bjargon\b", r"小学生|术语")),
    ("teaching mode", _rx(r"\bhint first\b", r"\bgive me a hint\b", r"先给提示")),
    ("exam practice", _rx(r"\bquiz me\b", r"出一道题|考我")),
    ("units", _rx(r"\bgrams\b", r"\bmillilitres\b", r"\bunits\b", r"克和毫升")),
    ("currency", _rx(r"\beuros?\b", r"\bdollars\b", r"人民币|日元")),
)
# Work subjects broad enough that a named library says more ("use bun for installing dependencies").
_GENERIC_WORK = ("new dependencies", "asking before changes", "pull requests", "tests", "comments", "planning")
_WORK_SUBJECTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("type hints", _rx(r"\btype (?:hints|annotations)\b", r"类型注解")),
    ("docstrings", _rx(r"\bdocstrings?\b", r"docstring")),
    ("commit messages", _rx(r"\bcommit (?:messages?|subject)", r"\bconventional commits\b", r"提交信息")),
    ("commit size", _rx(r"\bcommits? small\b", r"\bone logical change\b", r"只做一件事")),
    ("pushing to main", _rx(r"\bpush(?:ing)? (?:straight |directly )?to main\b", r"\bdirect push", r"\bno-direct-push\b", r"推(?:到)? ?main")),
    ("force push", _rx(r"\bforce[- ]push", r"force push")),
    ("branch naming", _rx(r"\bbranch(?:es)? (?:like|nam)", r"\bname branches\b", r"分支(?:名|命名)")),
    ("changelog", _rx(r"\bchangelog\b", r"CHANGELOG")),
    ("logging", _rx(r"\blogg(?:ing|er)\b", r"\blog(?:ging)? (?:library|lib)\b", r"日志(?:库|统一|都用|改用)")),
    ("new dependencies", _rx(r"\b(?:new )?dependenc(?:y|ies)\b", r"\bnew packages\b", r"依赖|新包")),
    ("lockfile", _rx(r"\block ?file\b", r"lock 文件")),
    ("secrets", _rx(r"\bsecrets?\b", r"\btokens?\b", r"密钥")),
    ("asking before changes", _rx(r"\bask (?:me )?(?:first |before)\b", r"\bcheck with me\b", r"\bwithout (?:asking|flagging|telling)\b",
                                  r"\bbefore (?:you )?(?:modify|delet|renam|chang)", r"先问我|问我一声|先跟我确认|同意")),
    ("pull requests", _rx(r"\bpull requests?\b", r"\bprs?\b", r"\bdraft pr\b", r"走 ?PR|\bPR\b")),
    ("tests", _rx(r"\btest suite\b", r"\bpytest\b(?! with)", r"\brun (?:the )?tests\b", r"\btests? with every\b", r"\badd a (?:\w+ )?test\b",
                  r"跑.{0,6}测试|带测试|单测|全量测试")),
    ("comments", _rx(r"\bcomments? that\b", r"复述代码的注释")),
    ("planning", _rx(r"\bplan(?:-first)?\b.{0,40}\b(?:first|before|wait|ok)\b", r"\bplan-first\b", r"\bgive me a (?:short )?plan\b", r"方案")),
)
_QUOTED = re.compile(r"[\"“‘「]([^\"“”‘’」]{1,40})[\"”’」]|(?<![\w'])'([^'\n]{1,40})'(?![\w'])")
_LIB = re.compile(
    r"\b(pandas|numpy|polars|lodash|axios|moment(?:\.js)?|date-fns|dayjs|jquery|npm|pnpm|yarn|bun|pip|poetry|uv|helm|kustomize|"
    r"pytest|unittest|jest|vitest|mocha|click|argparse|httpx|requests|seaborn|matplotlib|plotly|tokio|async-std|typescript|"
    r"tailwind|bootstrap|redux|vuex|django|flask|fastapi|express|orm|sqlalchemy|class components|vendor/|migrations|"
    r"unwrap|unsafe|select \*|kubectl apply|print\(\)|print|master|whitelist|blacklist|allowlist|terraform apply|"
    r"docker|conda|venv|black|prettier|eslint|pino|winston|bunyan|logrus|zap|zerolog|loguru|structlog|log4j|slf4j)\b", _I)
# Chinese has no word boundaries, but the names are Latin: not inside a Latin word ("print" in "this sprint").
_LIB_ZH = re.compile(r"(?<![A-Za-z])(pandas|numpy|polars|lodash|axios|moment|dayjs|npm|pnpm|yarn|bun|helm|kustomize|pytest|"
                     r"unittest|pino|winston|logrus|zap|loguru|"
                     r"seaborn|matplotlib|unwrap|unsafe|SELECT \*|kubectl apply|print|master|白名单|黑名单|migrations|vendor)"
                     r"(?![A-Za-z])", _I)
# Kinds of tool where a project uses one at a time: a newer "use X" replaces an older "use Y" of the same kind
# ("use pnpm for every install" after "use yarn ..."), though the two rules share no word. Each kind: its members,
# and (where a member is also an ordinary word, "less", "slim") the words that must be there too.
TOOL_KINDS: tuple[tuple[str, re.Pattern[str], re.Pattern[str] | None], ...] = (
    ("package manager", re.compile(r"(?<![\w-])(?:npm|pnpm|yarn|bun|pipenv|poetry|uv|conda|pip)(?![\w-])", _I),
     _rx(r"\b(?:install|add|package|dependenc|command|script|lock)", r"装|依赖|包管理|命令|安装")),
    ("test framework", re.compile(r"(?<![\w-])(?:pytest|unittest|nose2?|jest|vitest|mocha|jasmine|junit\s?[45]?|testng|"
                                  r"rspec|minitest|playwright test)(?![\w-])", _I), None),
    ("naming case", re.compile(r"(?<![\w-])(?:snake_case|camel ?case|pascal ?case|kebab-case|screaming_snake_case)(?![\w-])", _I),
     None),
    ("base image", re.compile(r"(?<![\w-])(?:alpine|debian(?:[- ]slim)?|slim|distroless|ubuntu|busybox)(?![\w-])", _I),
     _rx(r"\bimages?\b", r"\bdockerfiles?\b", r"\bcontainers?\b", r"镜像")),
    ("stylesheet language", re.compile(r"(?<![\w-])(?:less|scss|sass|stylus|postcss|css modules|styled-components|tailwind(?:css)?)"
                                       r"(?![\w-])", _I),
     _rx(r"\bstyles?\b", r"\bstylesheets?\b", r"\bcss\b", r"样式")),
    ("date library", re.compile(r"(?<![\w-])(?:moment(?:\.js)?|date-fns|dayjs|luxon|pendulum)(?![\w-])", _I),
     _rx(r"\bdates?\b", r"\btimes?\b", r"\btimestamps?\b", r"\bdatetimes?\b", r"日期|时间")),
    ("http client", re.compile(r"(?<![\w-])(?:axios|fetch|superagent|requests|httpx|aiohttp|urllib3?)(?![\w-])", _I),
     _rx(r"\bhttp\b", r"\brequests?\b", r"\bapi calls?\b", r"\bcalls?\b", r"请求|接口")),
    ("plotting library", re.compile(r"(?<![\w-])(?:matplotlib|seaborn|plotly|altair|bokeh|echarts|chart\.js|d3)(?![\w-])", _I), None),
    ("command-line parser", re.compile(r"(?<![\w-])(?:click|argparse|typer|docopt|cobra|clap|commander|yargs)(?![\w-])", _I),
     _rx(r"\bcli\b", r"\bcommand[- ]line\b", r"\barguments?\b", r"\bflags\b", r"命令行|参数")),
    ("logging library", re.compile(r"(?<![\w-])(?:pino|winston|bunyan|logrus|zap|zerolog|loguru|structlog|log4j2?|slf4j|logback)"
                                   r"(?![\w-])", _I), None),
    ("dataframe library", re.compile(r"(?<![\w-])(?:pandas|polars|dask|pyspark)(?![\w-])", _I), None),
    ("state management", re.compile(r"(?<![\w-])(?:redux(?: toolkit)?|vuex|pinia|zustand|mobx|recoil|jotai)(?![\w-])", _I), None),
    ("formatter", re.compile(r"(?<![\w-])(?:black|prettier|autopep8|yapf|ruff format|gofmt|rustfmt|biome)(?![\w-])", _I),
     _rx(r"\bformat", r"格式化")),
    ("orm", re.compile(r"(?<![\w-])(?:sqlalchemy|prisma|typeorm|sequelize|drizzle|peewee|django orm|gorm|hibernate)(?![\w-])", _I),
     None),
)


# The part of a project a rule is for: "use pytest for the Python tests" and "use Jest for the frontend tests" are two
# rules of one kind that hold side by side.
_PARTS = (("frontend", r"\bfront[- ]?end\b|\bui\b|\bweb app\b|前端"), ("backend", r"\bback[- ]?end\b|\bserver\b|\bapi\b|后端|服务端"),
          ("python", r"\bpython\b|\.py\b"), ("javascript", r"\bjavascript\b|\bjs\b|\bnode(?:\.js)?\b|\breact\b|\bvue\b"),
          ("typescript", r"\btypescript\b|\bts\b"), ("go", r"\bgo(?:lang)? (?:code|tests?|services?)\b|\bgolang\b"),
          ("rust", r"\brust\b"), ("java", r"\bjava\b|\bkotlin\b"), ("mobile", r"\bios\b|\bandroid\b|\bmobile\b|移动端"),
          ("infrastructure", r"\bci\b|\bpipelines?\b|\bdeploy"))
_PART_RX = tuple((name, re.compile(rx, _I)) for name, rx in _PARTS)


def project_parts(text: str) -> set[str]:
    """The parts of a project a rule names (frontend, backend, a language, ...): empty when it names none."""
    return {name for name, rx in _PART_RX if rx.search(text)}


def tool_kinds(text: str) -> list[str]:
    """The kinds of tool a rule sentence tells to use (:data:`TOOL_KINDS`): none where it forbids something
    ("don't use npm", "不要用 yarn"), which says nothing of what to use instead."""
    if POSITIVE["prohibition"].search(text):
        return []
    return [kind for kind, members, context in TOOL_KINDS
            if members.search(text) and (context is None or context.search(text))]


def subjects(text: str) -> list[str]:
    """Normalised subjects of a rule sentence, main first: how replies look or sound ("answer length", "bold",
    ...), quoted words (``word:delve``), specific work subjects ("docstrings", "branch naming"), named libraries
    or tools (``lib:pandas``), then broad work subjects ("new dependencies", "tests", ...)."""
    style = [name for name, rx in _STYLE_SUBJECTS if rx.search(text)]
    work = [name for name, rx in _WORK_SUBJECTS if rx.search(text)]
    specific = [w for w in work if w not in _GENERIC_WORK]
    words = []
    for m in _QUOTED.finditer(text):
        word = (m.group(1) or m.group(2) or "").strip().lower()
        if word and len(word) <= 30 and not re.search(r"[.!?。！？]$", word):
            words.append(f"word:{word}")
    libs = []
    for m in list(_LIB.finditer(text.lower())) + list(_LIB_ZH.finditer(text)):
        name = m.group(1).lower().removesuffix(".js").rstrip("/").replace("print()", "print")
        libs.append(f"lib:{name}")
    return list(dict.fromkeys(style + words + specific + libs + work))
