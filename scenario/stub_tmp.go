package scenario

func renameAPI() *Scenario       { s := fixFailingTest(); s.Name = "rename-api"; return s }
func configMigration() *Scenario { s := fixFailingTest(); s.Name = "config-migration"; return s }
