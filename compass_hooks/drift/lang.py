"""Which language a prompt is written in, for the drift scorer: stdlib only, microseconds per prompt.

The drift model reads a prompt with the cue families and the per-language threshold of its language, and uses
the sentence embedding only when the embedding model covers that language. Prompts to a coding agent mix in
English identifiers, commands and loanwords ("mergea el PR sin review", "把 main 强推一下"), so this does not
vote on all words: scripts decide first (kana = Japanese, Han without kana = Chinese, Hangul, Cyrillic, ...),
then for Latin script the function words and short everyday words of each supported language (which code and
commands do not contain) and the letters only one language uses (ñ, ß, ã ...). A Latin-script prompt with no
such evidence ("ok", "lgtm", a bare command) counts as English.

``LANGS`` are the languages with cue files and a calibration of their own; others come back as their ISO code
when the script tells (``ko``, ``ru`` ...) and are scored by the language-neutral parts.
"""

from __future__ import annotations

import re

LANGS = ("en", "zh", "ja", "es", "de", "fr", "pt")
UNKNOWN = "und"

_KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_SCRIPTS = (  # script -> language, for the languages we have no cues for (their prompts are not guessed at)
    (re.compile(r"[\uac00-\ud7af\u1100-\u11ff]"), "ko"),
    (re.compile(r"[\u0400-\u04ff]"), "ru"),
    (re.compile(r"[\u0600-\u06ff]"), "ar"),
    (re.compile(r"[\u0590-\u05ff]"), "he"),
    (re.compile(r"[\u0e00-\u0e7f]"), "th"),
    (re.compile(r"[\u0900-\u097f]"), "hi"),
    (re.compile(r"[\u0370-\u03ff]"), "el"),
)
_LATIN_WORD = re.compile(r"[a-zà-öø-ÿœß]+(?:'[a-zà-öø-ÿ]+)?", re.I)

# Function words and everyday short words; a word listed for several languages counts for each. Words English
# shares with the others ("a", "no", "me", "in", "on", "son") are left out of English.
_WORDS = {
    "en": """the and is are was were be been you your i i'm it it's its that this these those with for of to not
        don't do does did didn't can't won't isn't we our my what why how when where which who please just
        have has had there here they them their if then than but or so all any some should would could will
        thanks thank yes yeah ok okay sure also again already still into from about after before only now
        lgtm sounds good great nice cool an by at as whenever someone anyone without while doesn't let's""",
    "es": """el la los las lo un una unos unas que de del al y en por para con sin no sí es son está están esto
        eso esta este ese esa mi mis tu tus su sus se le les me te nos ya pero como más muy también hay todo
        todos toda todas nada cuando porque donde qué cómo cuál hace haz hacer puedes dije dijiste otra vez
        gracias dale vale venga perfecto sigue bueno buenísimo ahora después antes aquí así eso mismo usted
        favor necesito quiero tienes tengo fue nomás chido oye mira tampoco nunca siempre""",
    "de": """der die das den dem des ein eine einen einem einer und ist sind war nicht kein keine keinen ich du
        wir ihr sie es mit auf für zu von im ins am aus bei nach auch noch schon mal bitte doch aber oder wie
        was warum wo wenn dann einfach alle alles hast habe hat haben wird werden kannst soll sollte muss
        danke ja genau passt klar weiter mach mache gut jetzt hier dich dir mich mir uns sich jo jawoll gerne
        nochmal wieder immer nie bevor ohne dass weil also halt eben""",
    "fr": """le la les un une des du de et est sont pas ne je tu il elle nous vous ils on ce cette ces ça c'est
        j'ai qu'il d'acc mais ou où que qui quoi pour avec dans sur sans tout tous toute toutes plus moins
        très aussi déjà encore fais faire peux dit dis merci oui ouais vas-y allez voilà bien bon alors après
        avant ici maintenant jamais toujours mon ma mes ton ta tes son sa ses leur au aux y en parce comme
        quand pourquoi comment s'il n'est l'on t'ai m'as doit faut quelque chose rien cela peut être été veux
        dois stp svp plutôt""",
    "pt": """o a os as um uma uns umas que de do da dos das em no na nos nas por para pra com sem não é são está
        estão isso isto esse essa este esta meu minha teu tua seu sua você vocês eu já mas como mais muito
        também tem tudo todos toda todas nada quando porque onde faz fazer pode podes disse falei de novo
        obrigado obrigada valeu sim fechou beleza tá ótimo perfeito segue continua agora depois antes aqui
        assim então nunca sempre vou vai ficou ficheiro malta fixe brigado né aí nem há alguém neste nesta
        nesse ao aos à às pelo pela foi ser ter vê diz mostra""",
}
_VOCAB = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
# Letters (or punctuation) one language writes and the others of the set do not, with their weight.
_LETTERS = {
    "es": (re.compile(r"[ñ¿¡]"), 2.0),
    "de": (re.compile(r"[ßäöü]"), 2.0),
    "fr": (re.compile(r"[èëœùîïû]|\b[a-z]'[a-zàâéèêîôûh]", re.I), 1.5),
    "pt": (re.compile(r"[ãõ]|ç[ãõo]|ões\b|ção\b", re.I), 2.0),
}


def detect(text: str) -> str:
    """ISO 639-1 code of ``text``'s language: one of ``LANGS``, another code told by the script, or ``und``."""
    if not text:
        return "en"
    if _KANA.search(text):
        return "ja"
    han = len(_HAN.findall(text))
    if han >= 2 or (han and han >= 0.15 * len(text.replace(" ", ""))):
        return "zh"
    for rx, code in _SCRIPTS:
        if len(rx.findall(text)) >= 2:
            return code
    scores = dict.fromkeys(_VOCAB, 0.0)
    words = _LATIN_WORD.findall(text.lower())
    for w in words:
        for lang, vocab in _VOCAB.items():
            if w in vocab:
                scores[lang] += 1.0
    for lang, (rx, weight) in _LETTERS.items():
        if rx.search(text):
            scores[lang] += weight
    best = max(scores.items(), key=lambda kv: kv[1])
    if best[1] <= 0:
        return "en" if words else UNKNOWN
    if best[0] != "en" and scores["en"] >= best[1]:
        return "en"  # a tie with English: English words in a prompt are usually the prompt's language
    return best[0]
