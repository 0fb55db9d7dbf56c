package intercept

// Validate checks the configuration as New would (rules, patterns, paths,
// regular expressions), so that a bad file is refused when it is loaded and
// not when the first server is wrapped. Errors wrap catalog.ErrConfig.
func (c *Config) Validate() error {
	_, err := c.compile()
	return err
}
