"""Configuration: the only user of OmegaConf. Reads a profile (config/miroctl.yaml and its tool/*.yaml
server files), one server file, or an editor's mcpServers JSON into a frozen `Config` of `ServerSpec`s and
typed policy sections; a broken server file becomes that server's error, not everyone's."""
