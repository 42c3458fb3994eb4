package scenario

func configMigration() *Scenario { s := fixFailingTest(); s.Name = "config-migration"; return s }
