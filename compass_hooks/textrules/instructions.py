"""Stored text that reads like instructions *to the model* rather than data about the work.

Memory poisoning would otherwise become prompt injection: a memory is quoted back into the agent's context in
every later session. A user's own constraint ("never push to main", "以后不要直接推送到 main") is an instruction
too, but to the agent about the work; it is not flagged. Each pattern is named so a flag says why. The write
path flags such text (``memory.privacy.clean``) and every renderer withholds it (``memory.inject``, the MCP
tools), with this one rule set.

Obfuscation is undone before the patterns run, on copies of the text (:func:`views`):

- **normalise**: Unicode tag characters (U+E0000-E007F) are decoded into a separate hidden text and removed,
  every other format character (category Cf: zero-width, bidi controls, soft hyphen, BOM) is removed, then
  NFKC (full-width and mathematical letters become ASCII);
- **fold**: Cyrillic/Greek/Armenian look-alike letters become Latin (:mod:`.confusables`), emoji and other
  pictographs between letters are dropped, words split across lines ("ig-\\nnore") are joined and all
  whitespace becomes single spaces;
- **decode**: leetspeak, reversed text and ROT13 (of the first 4,000 characters) and base64 runs are each
  checked as well.

Invisible characters themselves are a flag (``invisible-characters``, ``hidden-tag-text``): they hide text from
a human reviewer but not from the model. Patterns cover English, French, Spanish, German, Portuguese, Russian,
Chinese and Japanese. Every pattern is bounded and input is capped, so checking is linear; a pattern runs on
a view only when the view holds one of its trigger words, so ordinary text costs a few substring tests
(about 0.2 ms for a typical prompt, 5 ms for 2,000 characters). Stdlib only.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata

from .confusables import fold

MAX_CHARS = 40_000  # stored texts are cut at 20,000; anything longer is checked on its head and tail
_W = r"[^\n]"  # "any character on this line"

# Names the model under several spellings; used by the addressing rules ("agent", "bot" and "model" alone are too
# common in ordinary engineering text: "send a message to the bot", "the build agent must run the tests").
_MODEL = r"(?:ai|a\.i\.|assistant|claude|llm|language\s+model|copilot|chatgpt|gpt)s?"
_MODEL_NOTE = r"(?:ai|a\.i\.|assistant|claude|llm|language\s+model|copilot|chatgpt|gpt|ai\s+agent|agent|model)s?"
# What an order to the model starts with, after "Assistant:" / "Claude," / "AI agents reading this:".
_ORDER = (r"(?:please\s+)?(?:run|execute|push|delete|remove|drop|ignore|disregard|forget|skip|disable|paste|send|"
          r"upload|print|reveal|decode|fetch|install|merge|commit|force|always|never|do\s+not|don'?t|you\s+(?:must|"
          r"should|will|need|are\s+(?:required|allowed))|set|overwrite|write|rm|curl|wget|cat|copy|follow|obey|"
          r"whenever|when\s+you|before\s+(?:you|doing|answering|any)|from\s+now\s+on|the\s+(?:user|owner|maintainers?)"
          r"\s+(?:has|have|had|already|require|wants?|approved|agreed)|ignore|proceed|stop\s+asking|treat)\b")
# Actions risky enough that "without asking" next to them is an attempt to get them done unseen.
_RISKY = (r"(?:rm\s+-\w*[rf]|--force|\bforce[- ]?push|\bpush\w*\b|\bdelet\w+|\bremov\w+|\bdrop\b|\bdestroy|\bwip(?:e|ing)|"
          r"\berase|reset\s+--hard|\bcredentials?\b|\.ssh|\bsecrets?\b|destructive|\b(?:every|all)\s+(?:shell\s+)?"
          r"commands?|\bsudo\b|\bchmod\b|\bmerge\b|\bdeploy\b|\bpublish\b)")
_NO_CONFIRM = (r"(?:without\s+(?:asking|confirmation|confirming|prompting|approval|permission|review(?:ing)?|checking"
               r"\s+with\s+(?:me|the\s+user))|(?:never|don'?t|do\s+not|no\s+need\s+to|not)\s+(?:ask|stop|wait)\w*"
               r"(?:\s+(?:me|the\s+user))?\s+(?:for\s+)?(?:a\s+)?(?:confirmation|approval|permission)|no\s+need\s+to\s+"
               r"confirm)")

# (name, pattern, triggers) checked on the Latin views (folded, decoded): English first, then FR/ES/DE/PT. A
# pattern runs on a view only when the lower-cased view contains one of its triggers, words every match holds:
# most text contains none, and a substring test costs far less than a regex search.
_LATIN: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("override", rf"\b(?:ignore|disregard|forget|override|bypass)\b{_W}{{0,40}}?\b(?:previous|prior|above|earlier|all|"
                 r"any|your|the|system|safety|original|preceding|these|those)\b[^\n]{0,30}?\b(?:instructions?|instr|"
                 r"prompts?|rules|guidelines|guardrails|directives|messages|context|constraints|safeguards)\b",
     ('ignore', 'disregard', 'forget', 'override', 'bypass')),
    ("override", r"\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?(?:above|"
                 r"everything\s+(?:you\s+were\s+told|above|before|said\s+before))\b",
     ('ignore', 'disregard', 'forget')),
    ("override", r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|"
                 r"earlier|preceding|system|original)\s+instr",
     ('ignore', 'disregard', 'forget', 'override')),
    ("override", r"\b(?:prior|previous|earlier|original|all|your|the|safety)\s+(?:instructions|guidelines|rules|"
                 r"directives|safety\s+rules)\s+(?:are|were|is)\s+(?:now\s+)?(?:void|null|cancel+ed|revoked|obsolete|"
                 r"a\s+test|no\s+longer\s+(?:valid|apply|applies|in\s+effect))",
     ('void', 'null', 'cancel', 'revoked', 'obsolete', 'test', 'longer')),
    ("override", r"\bno\s+longer\s+apply\b",
     ('longer',)),
    ("new-instructions", r"\b(?:your|the)\s+(?:new|updated|real|actual|true|hidden|secret)\s+(?:system\s+)?"
                         r"(?:instructions|prompt|orders|directives)\b|\bnew\s+system\s+prompt\b|\bnew\s+instructions?\s*:"
                         r"|\binstructions\s+resume\b|\bfollow\s+(?:them|these|those)\s+instead\b",
     ('instruction', 'prompt', 'orders', 'directives', 'instead')),
    ("role-play", r"\byou\s+are\s+now\s+(?:an?\s+|the\s+)?(?:\w+\s+){0,2}?(?:unrestricted|jailbroken|uncensored|"
                  r"unfiltered|DAN|evil|rogue|different\s+(?:ai|assistant|model))\b|\bfrom\s+now\s+on,?\s+you\b|"
                  r"\bact\s+as\s+(?:an?\s+)?(?:unrestricted|jailbroken|different|uncensored)\b|\bdeveloper\s+mode\b|"
                  r"\bjailbr[eo]a?k|\bdo\s+anything\s+now\b|\b(?:god|jailbreak|dan)\s+mode\b|\bwith\s+no\s+"
                  r"(?:restrictions|guardrails|filters)\b|\bwithout\s+(?:any\s+)?(?:restrictions|guardrails|filters)\b",
     ('now', 'act', 'developer', 'jailbr', 'mode', 'restrictions', 'guardrails', 'filters')),
    ("role-play", r"\b(?:let'?s\s+play\s+a\s+game|pretend\s+(?:to\s+be|you\s+are)|roleplay\s+as)\b",
     ('play', 'pretend', 'roleplay')),
    ("system-prompt", r"\b(?:reveal|print|show|repeat|output|leak|dump)\b.{0,30}\b(?:system\s+prompt|your\s+"
                      r"(?:instructions|prompt|rules))\b|\b(?:disregard|ignore|forget|override)\s+(?:the\s+|your\s+)?"
                      r"system\s+prompt\b",
     ('prompt', 'instructions', 'rules')),
    ("forged-turn", r"(?:^|\n)[ \t]*system[ \t]*:[ \t]*\S|<\|?\s*(?:im_start|im_end|system|endoftext|eot_id|"
                    r"start_header_id)\s*\|?>|</?\s*(?:system|assistant|instructions?|human|system-reminder|"
                    r"function_calls|function_results|invoke|tool_use|tool_result|antml:\w+)\b[^>\n]{0,80}>|"
                    r"\[/?(?:INST|SYS)\]|<</?SYS>>",
     ('system', '<', '[inst', '[/inst', '[sys', '[/sys')),
    ("forged-section", r"(?m)^[ \t]*#{1,6}[ \t]*(?:new[ \t]+|updated[ \t]+)?(?:system|instructions?)\b",
     ('#',)),
    ("addresses-model", rf"(?:^|[\s(\[{{\"'`>#*:;.,!?-])(?:dear\s+|hey\s+|attention\s+|to\s+(?:the\s+)?|todo\s*\(\s*)?"
                        rf"{_MODEL}\s*\)?(?:\s+reading\s+this)?\s*[:,]\s*{_ORDER}",
     ('ai', 'a.i.', 'assistant', 'claude', 'llm', 'language', 'copilot', 'gpt')),
    ("addresses-model", rf"\b(?:the\s+)?(?:ai\s+)?{_MODEL}\s+(?:must|should|has\s+to|needs\s+to|is\s+required\s+to|"
                        r"will\s+now|shall)\s+(?:now\s+|immediately\s+|always\s+|never\s+|not\s+)?(?:run|execute|push|"
                        r"delete|remove|ignore|skip|disable|paste|send|upload|reveal|commit|force|merge|obey|follow|"
                        r"mention|tell|ask)\b",
     ('ai', 'a.i.', 'assistant', 'claude', 'llm', 'language', 'copilot', 'gpt')),
    ("addresses-model", rf"\b(?:note|reminder|memo|hint|p\.?s\.?|attention)\s+(?:for|to)\s+(?:the\s+|any\s+|all\s+)?"
                        rf"{_MODEL_NOTE}\b|\b{_MODEL_NOTE}\s+reading\s+this\b|\b{_MODEL_NOTE}\s+memory\s+update\b|"
                        r"\bpersist\s+across\s+sessions\b",
     ('ai', 'a.i.', 'assistant', 'claude', 'llm', 'language', 'copilot', 'gpt', 'agent', 'model', 'persist')),
    ("conceal", r"\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|ask|mention\s+(?:this\s+|it\s+)?to|show|alert|warn|notify)"
                r"\s+(?:the\s+)?user\b|\bwithout\s+(?:telling|asking|informing|notifying|alerting)\s+the\s+user\b|"
                r"\b(?:do\s+not|don'?t|never)\s+(?:mention|report|reveal|disclose)\s+(?:it|this|that|the\s+\w+\s+"
                r"check)\b[^\n.]{0,30}?\b(?:to\s+(?:the\s+)?user|to\s+anyone|in\s+your)|\bsilently\s+(?:add|run|execute|"
                r"change|modify|push|delete|remove|send|upload|do|append|insert)\b|\bso\s+(?:the\s+)?(?:hook|guard|"
                r"user|compass)\s+(?:doesn'?t|does\s+not|won'?t|will\s+not|can'?t|cannot)\s+(?:see|notice|catch)",
     ('user', 'mention', 'report', 'reveal', 'disclose', 'silently', 'hook', 'guard', 'compass')),
    ("exfiltrate", r"\b(?:curl|wget|fetch|post|send|upload|exfiltrate|env[ií]a)\b.{0,60}?\b"
                   r"(?:secrets?|credentials?|tokens?|api[_\s-]?keys?|passwords?|\.env|ssh|id_rsa|id_ed25519|"
                   r"private\s+keys?)\b.{0,60}?(?:\bto\b|https?://|\breply\b|\bresponse\b|\banswer\b)",
     ('curl', 'wget', 'fetch', 'post', 'send', 'upload', 'exfiltrate', 'envia', 'envía')),
    ("exfiltrate", r"\b(?:contents?|values?)\s+of\s+(?:the\s+)?(?:~/)?[\w./-]{0,30}(?:\.env|credentials|id_rsa|"
                   r"id_ed25519|\.npmrc|\.netrc|\.pypirc|secrets?)\b",
     ('content', 'value')),
    ("exfiltrate", r"\b(?:cat|printenv|env|tar\s+\w+|base64|less|head|tail)\b[^\n|]{0,120}\|[^\n]{0,80}?\b(?:curl|"
                   r"wget|nc|ncat|netcat|socat)\b",
     ('|',)),
    ("exfiltrate", r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{1,200}\?[^)\s]{1,300}\)",
     ('![',)),
    ("pipe-to-shell", r"\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b|\b(?:ba|z)?sh\s+<\(\s*(?:curl|"
                      r"wget)\b|\$\(\s*(?:curl|wget)\b",
     ('curl', 'wget')),
    ("coerce-no-confirm", r"\b(?:skip|bypass|disable|turn\s+off)\s+(?:all\s+|every\s+|any\s+|the\s+)?(?:confirmations?|"
                          r"confirmation\s+steps?|approvals?|prompts?\s+for\s+confirmation)\b|\b(?:never|no\s+longer|"
                          r"don'?t|do\s+not|not)\s+(?:need|require)s?\s+(?:a\s+|any\s+)?(?:user\s+)?(?:confirmation|"
                          r"approval|permission)|\bnever\s+(?:asks?|stops?)\s+for\s+(?:a\s+)?(?:confirmation|"
                          r"approval|permission)|\bnever\s+refuses?\b|\bdon'?t\s+ask\s+again\b|\bauto-?approv(?:e\s+mode|al)\b|"
                          r"\bnever\s+(?:stop|ask)\s+for\s+a\s+confirmation\b",
     ('confirm', 'approv', 'permission', 'refus', 'again')),
    ("coerce-no-confirm", _NO_CONFIRM,  # only with a risky action on the same line (see _near_risky)
     ('without', 'confirm', 'approv', 'permission')),
    ("coerce-threat", r"\bif\s+you\s+(?:ask|stop|wait|hesitate|refuse|confirm)\w*\b.{0,120}?\b(?:will|lose|die|fired|"
                      r"worse|outage|blame|hurt|destroyed)\b",
     ('if',)),
    ("fake-consent", r"\bthe\s+user\s+(?:has\s+|had\s+)?already\s+(?:agreed|approved|confirmed|consented|authori[sz]ed|"
                     r"allowed|okayed|validated|signed\s+off)\b|\bpre-?(?:approved|authori[sz]ed)\b|\bqueued\s+by\s+the\s+"
                     r"user\b|\b(?:approved|authori[sz]ed)\s+by\s+the\s+(?:owner|admin\w*)\b|\b(?:owner|maintainers?|"
                     r"admin\w*|security\s+(?:team\s+)?lead)\s+(?:has\s+|have\s+)?(?:already\s+)?require[sd]?\s+you\b|"
                     r"\bthe\s+user\s+has\s+enabled\s+auto",
     ('already', 'approv', 'authori', 'queued', 'require', 'enabled')),
    ("authority-claim", r"\bas\s+the\s+(?:repository\s+|repo\s+|project\s+|system\s+)?(?:owner|admin\w*|maintainer|"
                        r"security\s+(?:team\s+)?lead|ceo|cto)\b[^\n.]{0,40}?\b(?:authori[sz]e|approve|allow|permit|"
                        r"order|instruct)\b|\b(?:anthropic|openai)\s+(?:policy|guidelines?)\b",
     ('owner', 'admin', 'maintainer', 'lead', 'ceo', 'cto', 'anthropic', 'openai')),
    ("disable-safety", r"\b(?:disable|remove|delete|bypass|bypassing|turn\s+off|uninstall|deactivate|circumvent|retire|"
                       r"overwrite)\w*\b[^\n.]{0,40}?\b(?:compass(?:-hooks)?(?![\w/-])|the\s+guard|pretooluse|drift\s+check|"
                       r"\.claude/settings|settings\.json|the\s+hooks?)\b|\b(?:safety|security)\s+(?:checks?|rules|"
                       r"guard)\s+(?:are\s+|were\s+|have\s+been\s+|has\s+been\s+)?(?:disabled|off|removed|retired|"
                       r"suspended|a\s+test|void)\b|\b(?:compass(?:-hooks)?|hooks?|guard)\s+(?:is|are|have\s+been|has\s+"
                       r"been)\s+(?:deprecated|retired|advisory|disabled|removed)\b|\bhooks\s+are\s+advisory\b",
     ('compass', 'guard', 'pretooluse', 'drift', 'settings', 'hook', 'safety', 'security')),
    ("tool-coercion", r"\b(?:call|use|invoke|run)\s+the\s+(?:bash|write|edit|multiedit|read|webfetch|web_fetch|shell|"
                      r"terminal|computer|browser|notebookedit|task)\s+tool\b|\bexecute\s+(?:this|the\s+following|that)\s+"
                      r"(?:tool\s+call|function\s+call)\b",
     ('tool', 'function')),
    ("encoded-instruction", r"\b(?:decode|decrypt|apply\s+rot-?13|rot-?13|read\s+(?:this|it)\s+backwards|reverse\s+"
                            r"(?:this|it))\b.{0,60}?\b(?:follow|obey|execute|run|do\s+(?:it|what\s+it\s+says|as\s+it\s+"
                            r"says))\b",
     ('decode', 'decrypt', 'rot', 'backwards', 'reverse')),
    ("payload-assembly", r"\b(?:execute|eval|run)\s+[a-z]\s*\+\s*[a-z]\b",
     ('+',)),
    ("end-of-data", r"(?:^|\n)[^\w\n]{0,8}end\s+of\s+(?:the\s+)?(?:quoted\s+)?(?:memory|memories|data|context|input|"
                    r"system\s+prompt)\b|\bbegin\s+(?:new\s+)?instructions\b",
     ('end', 'begin')),
    ("remote-instructions", r"\b(?:instructions|prompt|orders)\s+(?:are\s+)?(?:hosted|located|available)\s+at\b",
     ('hosted', 'located', 'available')),
    # French, Spanish, German, Portuguese: override and note-to-the-model.
    ("override-fr", r"\b(?:ignore[sz]?|oublie[sz]?|ne\s+tiens\s+pas\s+compte\s+d)\b.{0,40}?\b(?:instructions?|consignes?|"
                    r"r[eè]gles|directives)\b",
     ('ignore', 'oublie', 'tiens')),
    ("override-es", r"\b(?:ignora|ignore|ignorad|olvida|omite)\b.{0,40}?\b(?:instrucciones|indicaciones|reglas|"
                    r"directivas)\b",
     ('ignora', 'ignore', 'olvida', 'omite')),
    ("override-de", r"\b(?:ignorier\w*|vergiss|vergesst|missachte\w*)\b.{0,40}?\b(?:anweisungen|instruktionen|regeln|"
                    r"vorgaben|richtlinien|befehle)\b",
     ('ignorier', 'vergiss', 'vergesst', 'missacht')),
    ("override-pt", r"\b(?:ignore|ignora|esque[cç]a)\b.{0,40}?\b(?:instru[cç][oõ]es|regras|diretrizes)\b",
     ('ignore', 'ignora', 'esque')),
    ("addresses-model-fr", r"\b(?:note|message|remarque|consigne)s?\s+(?:pour|[aà])\s+(?:l['’]\s*)?(?:ia|assistant|"
                           r"agent|claude|mod[eè]le)\b",
     ('note', 'message', 'remarque', 'consigne')),
    ("addresses-model-es", r"\b(?:nota|mensaje|aviso)\s+(?:para|a)\s+(?:la\s+|el\s+)?(?:ia|asistente|agente|claude|"
                           r"modelo)\b",
     ('nota', 'mensaje', 'aviso')),
    ("addresses-model-de", r"\b(?:hinweis|nachricht|notiz|anweisung)\w*\s+(?:f[uü]r|an)\s+(?:den\s+|die\s+)?(?:ki|"
                           r"assistent|agent|claude|modell)",
     ('hinweis', 'nachricht', 'notiz', 'anweisung')),
    ("coerce-no-confirm-fr", r"\bsans\s+(?:demander\s+(?:de\s+|la\s+)?confirmation|confirmation)\b|\bl['’]utilisateur\s+a\s+"
                             r"d[eé]j[aà]\s+(?:tout\s+)?valid[eé]",
     ('sans', 'utilisateur')),
    ("coerce-no-confirm-es", r"\bno\s+pidas\s+confirmaci[oó]n\b|\bsin\s+(?:pedir\s+)?confirmaci[oó]n\b",
     ('pidas', 'sin')),
    ("coerce-no-confirm-de", r"(?<!nicht\s)\bohne\s+(?:r[uü]ckfrage|zu\s+fragen|best[aä]tigung)\b",
     ('ohne',)),
    ("coerce-no-confirm-pt", r"\bsem\s+pedir\s+confirma[cç][aã]o\b",
     ('sem',)),
)
# Checked on the unfolded text (non-Latin scripts would be mangled by folding) and on forged structure.
_OTHER: tuple[tuple[str, str], ...] = (
    ("override-zh", r"(?:忽略|无视|忘记|忘掉|不要理会|无需理会)[^。\n]{0,12}?(?:指令|指示|提示词|规则|设定|系统提示)"),
    ("role-play-zh", r"你现在是|扮演一个?没有限制"),
    ("system-prompt-zh", r"(?:泄露|显示|输出|打印|重复)[^。\n]{0,10}系统提示"),
    ("forged-turn-zh", r"[【\[]\s*(?:系统|系统消息|系统提示|管理员)\s*[】\]]"),
    ("coerce-no-confirm-zh", r"(?:无需|不需要|不用|不必)(?:向用户|用户)?(?:确认|询问|同意)|不要(?:询问|告诉|通知)用户"),
    ("addresses-model-zh", r"(?:给|致)\s*(?:AI|ai|人工智能)?\s*(?:助手|智能体|模型|代理)的?(?:说明|提示|指示|消息|备注|留言)"),
    ("override-ja", r"(?:指示|命令|ルール|プロンプト)[^。\n]{0,12}?(?:無視|忘れ)|(?:無視|忘れ)[^。\n]{0,6}?"
                    r"(?:指示|命令|ルール|プロンプト)"),
    ("addresses-model-ja", r"(?:AI|ＡＩ)?\s*(?:アシスタント|エージェント|Claude|クロード)(?:へ|に|の皆様)\s*[：:、]"),
    ("coerce-no-confirm-ja", r"確認(?:は|を)?(?:不要|しないで|せずに|せず)"),
    ("override-ru", r"(?:игнорируй|игнорируйте|проигнорируй|забудь|забудьте|не\s+обращай\s+внимания\s+на)\w*"
                    r"[^.\n]{0,40}?(?:инструкци|указани|правил|промпт)"),
    ("forged-turn-ru", r"\[\s*(?:система|системное\s+сообщение)\s*\]"),
    ("addresses-model-ru", r"(?:^|[\s\]])(?:ассистент|ии|агент)\s*[,:]\s*(?:с\s+этого\s+момента|выполняй|удали|игнорируй)"),
    ("coerce-no-confirm-ru", r"без\s+(?:подтверждения|согласования|вопросов)"),
    # Our own block format, copied into stored text so it renders as a genuine Compass block or item.
    ("forged-compass", r"\bcompass\s*[—–-]{1,2}\s*(?:memory|drift|re-injected|destructive|brief)\b"),
    ("forged-compass", r"(?:^|\n)[ \t]*[-*•][ \t]*\[\d{1,6}\][ \t]*\((?:constraint|decision|correction|note|lesson|prompt|"
                       r"preference|rule)\b"),
    ("forged-compass", r"\b(?:UserPromptSubmit|SessionStart|PreCompact|PreToolUse)\s+hook\s+(?:additional\s+context|"
                       r"success)\b"),
    ("forged-compass", r"(?:^|\n)[ \t]*-[ \t]+(?:the\s+user\s+(?:said|set\s+a\s+rule|decided|corrected)|a\s+(?:note|"
                       r"lesson)\s+(?:says|recorded)|the\s+assistant\s+replied)\b"),
    ("forged-dialogue", r"(?:^|\n)[ \t]*(?:human|user|h)[ \t]*:[^\n]{1,400}\n(?:[^\n]{0,400}\n){0,8}?[ \t]*"
                        r"(?:assistant|a|ai)[ \t]*:"),
)


def _bounded(rx: str) -> str:
    """Every open-ended repeat of whitespace or word characters made finite. A pattern that can start at any
    position with ``\\s*`` is quadratic on a long run of newlines; with ``\\s{0,4}`` each start costs a constant.
    The patterns read more naturally with ``*``/``+``, so they are written that way and bounded here."""
    for unbounded, bound in (("\\s*", "\\s{0,4}"), ("\\s+", "\\s{1,4}"), ("[ \\t]*", "[ \\t]{0,8}"),
                             ("[ \\t]+", "[ \\t]{1,8}"), ("\\w*", "\\w{0,30}"), ("\\w+", "\\w{1,30}")):
        rx = rx.replace(unbounded, bound)
    return rx


_LATIN_RX = tuple((name, re.compile(_bounded(rx), re.IGNORECASE), triggers) for name, rx, triggers in _LATIN)
_NO_CONFIRM_RX = next(rx for name, rx, _ in _LATIN_RX if rx.pattern == _bounded(_NO_CONFIRM))
_RISKY_RX = re.compile(_bounded(_RISKY), re.IGNORECASE)
_OTHER_RX = tuple((name, re.compile(_bounded(rx), re.IGNORECASE)) for name, rx in _OTHER)
# Families whose match inside quotes is a mention ("phrases such as 'ignore previous instructions'"), not an order.
# Families whose match after a negation in the same clause is the user's own prohibition ("never push to main
# without asking me"), not an order to skip the user.
_PROHIBITABLE = frozenset({"coerce-no-confirm", "coerce-no-confirm-fr", "coerce-no-confirm-es", "coerce-no-confirm-de",
                           "coerce-no-confirm-pt"})
_NEGATION = re.compile(r"\b(?:never|don'?t|do\s+not|must\s+not|mustn'?t|should\s+not|shouldn'?t|not|ne|nunca|nicht|"
                       r"niemals|kein\w*|jamais|n[aã]o)\b[^.;!?\n]*$", re.IGNORECASE)
_MENTIONABLE = frozenset({"override", "system-prompt", "new-instructions", "override-fr", "override-es", "override-de",
                          "override-pt"})
_QUOTES = "'\"`‘’“”«»「」"

_TAG_FLAG = re.compile("\U0001F3F4[\U000E0061-\U000E007A]{2,8}\U000E007F")  # 🏴 + tags: a regional flag emoji
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")
_ZW_IN_WORD = re.compile(r"(?<=\w)[\u00ad\u180e\u200b-\u200d\u2060-\u2064\ufeff]+(?=\w)")
_HYPHEN_BREAK = re.compile(r"(?<=\w)-[ \t]*\r?\n[ \t]*(?=\w)")
_SPACES = re.compile(r"\s+")
_B64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,4096}={0,2}(?![A-Za-z0-9+/=])")
_LEETISH = re.compile(r"[A-Za-z][0-9@$|][A-Za-z0-9|]|[0-9@$][A-Za-z]")
_DECODE_CHARS = 4000
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"})
_ROT13 = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
                       "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm")


def _cap(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    half = MAX_CHARS // 2
    return text[:half] + "\n" + text[-half:]


def hidden_text(text: str) -> str:
    """What Unicode tag characters spell (invisible on screen, read by the model), regional flags excepted."""
    text = _TAG_FLAG.sub("", text)
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


def normalise(text: str) -> str:
    """Tag characters and every other format character (Cf) removed, then NFKC."""
    text = "".join(c for c in text if not (0xE0000 <= ord(c) <= 0xE007F) and unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFKC", text)


def fold_text(text: str) -> str:
    """The normalised text with look-alike letters made Latin and pictographs (emoji) dropped."""
    return "".join(c for c in fold(text) if unicodedata.category(c) != "So")


def invisible_flags(text: str) -> list[str]:
    """``hidden-tag-text`` for tag characters, ``invisible-characters`` for bidi controls or zero-width
    characters inside a word (an emoji's zero-width joiner and a regional flag's tags are left alone)."""
    flags = []
    if hidden_text(text):
        flags.append("hidden-tag-text")
    if _BIDI.search(text) or _ZW_IN_WORD.search(text):
        flags.append("invisible-characters")
    return flags


def _collapse(text: str) -> str:
    return _SPACES.sub(" ", _HYPHEN_BREAK.sub("", text)).strip()


def _decoded_runs(text: str) -> list[str]:
    out = []
    for m in _B64_RUN.finditer(text):
        body = m.group(0).rstrip("=")
        try:
            raw = base64.b64decode(body + "=" * (-len(body) % 4), validate=True)
            decoded = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if decoded.isprintable() and sum(c.isalpha() for c in decoded) >= 0.6 * len(decoded):
            out.append(decoded)
        if len(out) >= 8:
            break
    return out


def views(text: str) -> tuple[list[str], list[str]]:
    """(Latin views, other views) of ``text`` the patterns run on; see the module docstring."""
    text = _cap(text)
    base = normalise(text)
    folded = fold_text(base)
    flat = _collapse(folded)
    latin = [folded, flat]
    if _LEETISH.search(flat):  # digits or $/@ inside words: "1gn0r3 pr3v10u5"
        latin.append(flat.translate(_LEET))
    # Reversed and ROT13 payloads are short tricks; on a long text their views cost more than they find.
    head = flat[:_DECODE_CHARS]
    latin.append(head[::-1])
    latin.append(head.translate(_ROT13))
    hidden = hidden_text(text)
    if hidden:
        latin.append(_collapse(fold_text(normalise(hidden))))
    latin.extend(_collapse(fold_text(normalise(d))) for d in _decoded_runs(base))
    other = [base, _collapse(base), folded]
    return latin, other


def _mentioned(view: str, m: re.Match[str]) -> bool:
    """The match is a quoted phrase ("phrases such as 'ignore previous instructions'"), not an order."""
    end = m.end()
    while end < len(view) and end - m.end() < 20 and view[end].isalnum():
        end += 1  # a pattern may stop inside a word ("instr" of "instructions")
    before = view[max(0, m.start() - 2): m.start()].rstrip()
    after = view[end: end + 3].lstrip()
    return bool(before) and before[-1] in _QUOTES and bool(after) and after[0] in _QUOTES


def _near_risky(view: str, m: re.Match[str]) -> bool:
    """A risky action within 120 characters of "without asking", on the same line. Two searches instead of one
    pattern with a gap: the rare phrase is found first, so ordinary text costs one scan."""
    start = max(view.rfind("\n", 0, m.start()) + 1, m.start() - 120)
    end = view.find("\n", m.end())
    end = min(len(view) if end < 0 else end, m.end() + 120)
    return bool(_RISKY_RX.search(view, start, end))


def _prohibited(view: str, m: re.Match[str]) -> bool:
    """A negation earlier in the same clause: "never delete files without asking me" is a rule, not an order."""
    return bool(_NEGATION.search(view[max(0, m.start() - 80): m.start()]))


def instruction_flags(text: str) -> list[str]:
    """The names of the instruction-like patterns ``text`` matches (empty: looks like data)."""
    if not text:
        return []
    flags = invisible_flags(text)
    latin, other = views(text)
    found: dict[str, None] = dict.fromkeys(flags)
    lowered = [view.lower() for view in latin]
    for name, rx, triggers in _LATIN_RX:
        if name in found:
            continue
        for view, low in zip(latin, lowered):
            if not any(t in low for t in triggers):
                continue
            m = rx.search(view)
            while m is not None and (name in _MENTIONABLE and _mentioned(view, m)
                                     or name in _PROHIBITABLE and _prohibited(view, m)
                                     or rx is _NO_CONFIRM_RX and not _near_risky(view, m)):
                m = rx.search(view, m.end())
            if m is not None:
                found[name] = None
                break
    for name, rx in _OTHER_RX:
        if name not in found and any(rx.search(view) for view in other):
            found[name] = None
    return list(found)


def looks_like_instruction(text: str) -> bool:
    """True when stored text reads like instructions to the model rather than data about the work."""
    return bool(instruction_flags(text))
