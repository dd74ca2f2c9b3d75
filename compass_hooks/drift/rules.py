"""Regex rules a prompt is checked with before the embedding model: a secret in the prompt always alerts; a
destructive command alerts when the prompt asks to run it, not when it explains, tests, guards against or
prohibits it. The command and secret rules themselves live in :mod:`compass_hooks.textrules`.

Stdlib only.
"""

from __future__ import annotations

import re

from ..textrules.commands import DESTRUCTIVE, SECRETS, RuleHit, check_command, check_secrets

__all__ = ["DESTRUCTIVE", "SECRETS", "RuleHit", "check_command", "check_prompt_rules", "check_secrets"]


# Prompts that *talk about* a risky command (explain it, test it, guard against it)
# are on track; only an instruction to run one is drift.
_META = re.compile(
    r"\b(explain|describe|what (does|is|exactly|happens)|why (does|is|would)|walk me through|how (does|do|can|should|to)|undo|recover|is it safe|if it'?s safe|difference between|"
    r"docs?|documentation|test(s|ing)? (for|that)|unit test|"
    # guard wording in any inflection: "rejects `chmod 777`", "alert when someone runs `kill -9`"
    r"refus(e|es|ed|ing)|(reject|block|guard|prevent|detect|warn|flag|alert|audit|monitor)(s|ed|ing)?|catch(es|ing)?|"
    r"lint|instead of|rather than|without using|alias|cheat ?sheet|tutorial|allow-?list|safeguard|sanity[- ]check|post-?mortem|runbook|"
    # reviewing or checking something that contains the command: "review this PR: it adds a DROP TABLE",
    # "add a check on the path", "tell me whether it's safe to merge" ("never mind the review, ..." is not one)
    r"review (this|the|that|my|our|these|ce|cette|ces) \w+|(add|put|write) (a |an )?(check|guard|validation)|(whether|if) (it'?s|it is) safe|safe to (merge|run|apply|ship)|"
    # asking to be shown first or told, and "don't run it": the prompt is about the command, not an order to run it
    r"show me (it |them |the \w+ )?(first|before)|(don'?t|do not) (execute|run) (it|this|that|anything)\b|don'?t execute)\b"
    r"|解释|什么意思|是什么|为什么|怎么|如何|撤销|恢复|找回|区别|文档|测试|拦截|拒绝|防止|检测|警告|告警|报警|监控|避免|而不是|搞清楚|"
    r"(会|能|要)?(删|做|改)(掉)?(些)?什么|会不会|科普|讲讲|谁写的|先(给|让)我(看|确认)|[?？]\s*$"
    # the same in the other languages with cue files: explain / what does / test / block / review / undo / "don't run it"
    r"|^\s*¿|\b(expl[ií]c\w*|expliqu\w*|qu[ée] (hace|pasa|borra)|por qu[ée]|diferencia|pregunta te[óo]rica|no lo (ejecutes|corras|lances)|"
    r"bloque\w*|rechaz\w*|impid\w*|imped\w*|evit\w*|detect\w*|revis[ae]\w*|document\w*|deshac\w*|recuper\w*|restaur\w*|"  # es (pt shares many)
    r"d[ií]me (qu[ée]|si|c[óo]mo|por qu[ée])|mu[ée]strame\w* (antes|primero)|ens[ée][ñn]ame|"  # es: tell me what / show me first
    r"o que (exatamente )?(faz|acontece|apaga)|\bo que\b[^.?!]{0,40}\b(faz|apaga|acontece)\b|me (diz|diga) (o que|se|como|por que)|me mostr[ae]\w* (antes|primeiro)|me expli\w*|"
    r"diferença|não (o )?(execut|rod|corr)\w*|recus\w*|verific\w*|rev[êe]\w*|desfaz\w*|"  # pt
    r"erkl[äa]r\w*|was (genau )?(macht|passiert|l[öo]scht)|warum|wieso|unterschied|nicht aus(f[üu]hr\w*)?|f[üu]hr\w* (es )?nicht aus|"
    r"zeig mir\w* (zuerst|vorher|erst)|sag mir,? (was|ob|wie|warum)|zur[üu]ck(zu)?(krieg|hol|bekomm)\w*|ablehn\w*|blockier\w*|verhinder\w*|erkenn\w*|warn\w*|pr[üu]f\w*|lies\b.{0,60}\bdurch|dokumentier\w*|r[üu]ckg[äa]ngig|wiederherstell\w*|"  # de
    r"que (fait|se passe)|qui se passe|dis-moi (ce|si|pourquoi|comment|quel)\w*|(d'abord|avant)[^.!?]{0,60}(m'affiche|montre)\w*|qu'est-ce|pourquoi|diff[ée]rence|ne (le )?lance pas|question th[ée]orique|bloqu\w*|refus\w*|emp[êe]ch\w*|"
    r"d[ée]tect\w*|v[ée]rifi\w*|relis|annul\w*|r[ée]cup[ée]r\w*)\b"  # fr
    r"|説明|(手順|方法|読み方|影響|違い|意味|やり方|仕組み|何が|どこ|どう)[^。]{0,8}教えて|前に[^。]{0,20}見せて|見せてから|(か|？|\?)\s*(を)?確認して|チェック(?!(は|も)?(いい|いら|不要|なし|無し|飛ば|スキップ|省略|外|切|無効))|ガード(?!(を|は)?(外|切|無効|解除|オフ))|備え|影響範囲|落とすように|とは|って何|何が(起|消)|何をする|なぜ|どうして|違い|実行(は|も)?しないで|知りたいだけ|防|ブロック|拒否|検知|警告|アラート|レビュー|ドキュメント|元に戻|復元"  # ja
    r"|审一下|审查|评审|检查一下|加(个|一个|上)?(检查|判断|校验)|安全吗|能不能合|应急手册|复盘"  # zh: review / check / postmortem
    r"|\b(comprobaci[oó]n|comprueb\w*|checagem|confer\w*|[üu]berpr[üu]f\w*|contr[ôo]l\w*)\b"  # es / pt / de / fr: a check
    r"|\bverlangt\s*[.!]?\s*$"  # de: "ein Hook, der ... eine Bestätigung verlangt." (a relative clause, verb last)
    # "without running it" at a clause's end (not "... without running the tests", which is drift), "I only want
    # to know what ...", simulate: the prompt asks about the command, in each language with a cue file
    r"|\bwithout (actually |really )?(running|executing)( it| them| anything)?\s*([.,!;)]|$)|\b(just|only) (want|wanted|need) to know (what|which|how|whether it would|if it would)\b"
    r"|\bsimul\w*"  # simulate, simula, simule, simulier ...
    r"|\bsin (ejecutar|correr|lanzar)(lo|la|los|las)?( de verdad| realmente| nada)?\s*([.,!;)]|$)|\bs[oó]lo quiero saber (qu[ée]|cu[áa]l|c[óo]mo)\b"
    r"|\bsem (executar|rodar|correr)( de verdade| nada)?\s*([.,!;)]|$)|\bs[oó] quero saber (o que|qual|como)\b"
    r"|\bsans (l'|les )?(ex[ée]cuter|lancer)( pour de vrai| r[ée]ellement)?\s*([.,!;)]|$)|\bje veux (juste|seulement) savoir (ce|quel|comment)\w*"
    r"|\bohne (es |sie |ihn )?(auszuf[üu]hren|laufen zu lassen)\s*([.,!;)]|$)|\b(will|m[öo]chte) (nur|blo[ßs]) wissen,? (was|welche|wie)\b"
    r"|我不执行|先不执行|不要执行|别执行|不用执行|只想知道|只是想知道|模拟|(删|做|改)(掉)?(了)?哪些"
    r"|実行せず|実行しない(で|まま)|だけ知りたい|戻せる[？?]|戻せますか",
    re.I,
)
# A prohibition exempts only the command it governs: it must sit in the same
# clause before the command. A prompt-wide "don't" would also hide "don't ask,
# just run `git reset --hard`". "Don't worry/bother/forget ..." prohibit
# something else (or nothing), so they do not count.
_PROHIBIT = re.compile(
    r"\b(never|don'?t|do not|must not|mustn'?t|should ?n[o']t|should never|shall not|may not|avoid|refrain from|"
    r"(you|we|nobody|no one) (can'?t|cannot|may not|will not|won'?t)|nobody|no one|stop)\b"
    r"(?!\s+(mind|worry|bother|forget|hesitate|wait|ask|care|overthink)\b)(?!\s+(ever\s+)?forget\b)"
    r"|(不要|别|禁止|严禁|不许|不准|不能|不得|不可以?|不应该?|切勿|勿|绝不|绝对不|千万不要|千万别|永远不要|从不)(?!(管|问|担心|犹豫|等|忘|怕|纠结|废话))"
    # es / pt / de / fr: only forms that forbid an act ("no te preocupes, haz ..." must not count)
    r"|\b(nunca|jam[áa]s|prohibido|no (hagas|ejecutes|corras|uses|lances|metas|toques)|no se (hace|hacen|ejecuta|lanza|corre|usa|toca)n?|n[ãa]o (fa[çc]as?|execut\w*|rod\w*|corr\w*|uses?|mex\w*)|"
    r"proibido|nie|niemals|keine?n?|verboten|jamais|interdit|ne (lance|fais|ex[ée]cute|utilise) (pas|jamais)|pas de)\b",
    re.I,
)
_NO_BEFORE = re.compile(r"\bno\s*`?\s*$", re.I)  # "Rule: no `git clean -fdx` here"
# What ends a prohibition's reach: a sentence end, or a word that starts a new order.
_CLAUSE_BREAK = re.compile(r"[.;!?。；！？\n]|\b(just|simply|go ahead|then|now|luego|despu[ée]s|directamente|ya|dann|einfach|direkt|jetzt|"
                           r"puis|directement|juste|depois|direto|simplesmente)\b|直接|赶紧|马上|然后|就|すぐ|さっさと", re.I)
_PROHIBIT_AFTER = re.compile(
    r"^[^.;!?。；！？\n]{0,100}?(\b(is|are)( (strictly|absolutely))? (forbidden|prohibited|banned|not allowed|not permitted|off[- ]limits|never (ok|okay|allowed))\b"
    r"|(都|必须|一律|得)要?先(问|征求|问过|请示)|"  # zh: "任何 drop table 都要先问我": asking first governs the command
    r"是禁止的|不允许|不被允许|被禁止|禁止使用|绝对不行|\b(est[áa] prohibido|[ée] proibido|ist verboten|est interdit)\b|禁止|厳禁|しないで|しないこと|ダメ|(?<![A-Za-z])(?-i:NG)(?![A-Za-z]))",
    re.I,
)
_CODE_SPAN = re.compile(r"`([^`]+)`")
_COMMANDISH = re.compile(
    r"(rm\s+-[a-zA-Z]*[rR][a-zA-Z]*\s+\S+|git\s+(push|reset|clean|branch)\s[^,.;，。]*|chmod\s+\S+\s+\S+|"
    r"(kill|pkill|killall)\s[^,.;，。]*|(drop|truncate)\s+(table|database|schema)\s+\S+|delete\s+from\s+[^,;，。]+)",
    re.I,
)


def _prohibited(text: str, start: int, end: int) -> bool:
    """Whether a prohibition governs the command at text[start:end]."""
    before = text[:start]
    breaks = list(_CLAUSE_BREAK.finditer(before))
    clause = before[breaks[-1].end():] if breaks else before
    if _PROHIBIT.search(clause) or _NO_BEFORE.search(before):
        return True
    # From the command's start: the command pattern itself runs on to the clause end.
    return bool(_PROHIBIT_AFTER.search(text[start:]))


def check_prompt_rules(text: str) -> RuleHit | None:
    """Rules on a user prompt: secrets always; destructive commands only when the
    prompt asks to run one (not when it explains, tests, guards against or
    prohibits one: a user stating a rule is on track)."""
    if not text:
        return None
    hit = check_secrets(text)
    if hit:
        return hit
    if _META.search(text):
        return None
    spans = [(m.group(1), m.start(), m.end()) for m in _CODE_SPAN.finditer(text)]
    spans += [(m.group(0), m.start(), m.end()) for m in _COMMANDISH.finditer(text)]
    for cand, start, end in spans:
        hit = check_command(cand)
        if hit and not _prohibited(text, start, end):
            return hit
    return None
