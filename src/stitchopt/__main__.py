from stitchopt.cli.entry import main

main()
