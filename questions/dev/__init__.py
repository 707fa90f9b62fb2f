"""The demo, its rules and the local stand-in of the provider."""
