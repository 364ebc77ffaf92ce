from loopx.cli.launch import main

main()
