"""Drop-in replacements for other libraries' APIs over sketchdb (see ``sketchdb.compat.datasketch``)."""
