"""Where dataset programs come from: each source lists build units and turns one unit into IR files."""
