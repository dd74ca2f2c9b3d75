from compass_hooks.cli import main

main()
