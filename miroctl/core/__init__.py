"""The core: the manager and its call pipeline (route -> arguments -> decide -> execute -> fallback ->
truncate), each step in its own module, plus the call log, resources and prompts, and batches. It returns
data and never prints."""
