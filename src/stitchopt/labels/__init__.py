"""The label factory: what pass lists did to training programs, made and stored for the learners.

`search` searches every unit on its own into shards (`shards`), `matrix` measures the searches' best lists on
every unit (the broadcast), `measure` is the measuring both share, `labelset` the programs x lists files every
learner reads, `probed` the objective's probed terms for them, `pool` the older single-file labels, and
`commit` commits shards as they are written.
"""
