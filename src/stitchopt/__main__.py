from stitchopt.cli.main import main

main()
