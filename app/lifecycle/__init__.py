"""What is asked of every feature at once: the sweeper (`sweeper`), erasing a
user or an app (`erasure`), and the list of every feature's tables that says
what each of them, and an export, does with each table (`tables`)."""
