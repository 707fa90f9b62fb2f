"""The contract and its analysis: pure Python, no ORM, no HTTP."""
