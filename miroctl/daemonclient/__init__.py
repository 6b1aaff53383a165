"""What a client of the keep-alive daemon needs (the CLI's commands and the library's ToolManager alike):
where a configuration's daemon lives, finding or starting it under its lock, and the note for a dead one's
lost state. The daemon itself (miroctl.daemon) sits above; this package starts it by module name only."""
