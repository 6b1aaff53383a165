import sys

print("quitter: no database at ./data.db", file=sys.stderr)
sys.exit(3)
