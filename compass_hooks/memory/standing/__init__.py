"""Standing instructions: rules the user sets in a prompt for the rest of the work ("from now on, no bold",
"这个项目不许用 pandas"), detected without an LLM (:mod:`.cues` + :mod:`.detect`, trained by :mod:`.train`),
kept per session / project / everywhere with revocation and replacement (:mod:`.active`, table
``instructions``), and shown with every later prompt (:mod:`.api`). docs/memory.md, "Standing instructions"."""
