"""Known answers to built-in and benchmark tasks (`candidates.py`): the reference, mutants of it
(`mutate.py`) vetted to fail (`mutant_vetting.py`, `vetted_mutants*.json`), a design that does
not compile and one that never finishes."""
