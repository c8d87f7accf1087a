"""The slot's warm parents: which one a program needs (`parents`, from what its source shows and
`shapes` remembers), each kind's zygotes and their renewal (`lineage`), the handle on each zygote
process (`zygotes`), and the template statements compiled once per slot (`prefixes`).  Slot-server
side: nothing here runs in a zygote."""
