"""Letters from other scripts that look like Latin ones: a small, vendored slice of Unicode's confusables
(UTS #39 ``confusables.txt``) for the scripts an attacker mixes into Latin words to slip past a pattern
("Іgnore" with a Cyrillic І, "ρrevious" with a Greek rho). Data only, stdlib only: the hook process reads it
under ``python -I -S``, so a PyPI table (confusable-homoglyphs) is not an option there.

Only :func:`fold` uses it, on a copy of the text that is checked and never stored or shown: folding real
Russian or Greek text produces nonsense, which is why the instruction rules for those languages run on the
unfolded text. Full-width and mathematical letters need no table: NFKC maps them.
"""

from __future__ import annotations

# Cyrillic, Greek, Armenian and a few Latin-extended letters -> the ASCII letter they are drawn like.
_PAIRS = (
    # Cyrillic lower case
    "аa вb еe ёe һh іi їi јj кk ӏl мm нh оo рp сc ѕs тt уy ўy хx ԁd ԛq ԝw үy ҫc ӑa ӓa ӧo ӱy ԍg ɡg"
    # Cyrillic upper case
    " АA ВB ЕE ЁE ЅS ІI ЇI ЈJ КK МM НH ОO РP СC ТT УY ХX ԀD ԌG ԚQ ԜW ҮY ӀI ҺH Ӏl"
    # Greek
    " ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX Ϲc ϳj αa βb γy εe ηn ιi κk νv οo ρp τt υu χx ωw ϲc ϵe"
    # Armenian
    " օo սu ցg հh ոn ռn ոn Օo Տs"
    # Latin extended / IPA that read as plain letters
    " ıi ȷj ɑa ɩi ʟl ᴀa ᴄc ᴅd ᴇe ᴋk ᴍm ᴏo ᴘp ᴛt ᴜu ᴠv ᴡw ᴢz ꞮI"
)
TABLE: dict[int, str] = {ord(p[0]): p[1] for p in _PAIRS.split() if len(p) == 2}


def fold(text: str) -> str:
    """``text`` with look-alike letters replaced by the Latin letter they imitate."""
    return text.translate(TABLE)
