"""The bottom layer: errors and their exit codes, the data the core hands back (the JSON contract),
masking of secrets, and the words of messages. Imports nothing else of miroctl."""
