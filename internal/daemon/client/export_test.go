package client

import "github.com/rukh-cli/rukh/thin"

// Keep keeps s as a finished read's session.
func (a *Auto) Keep(s *thin.Session) { a.kept.put(s) }
