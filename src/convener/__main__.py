from convener.cli import main

main()
