"""`perfbench selfcheck`: can this machine give numbers you can trust?"""
