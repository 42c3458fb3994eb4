package views

// filterValue is what the runs filter's date input shows back.
func filterValue(name string, l RunsList) string {
	if name == "since" {
		return l.Since
	}
	return l.Until
}

// filterLabel is the date input's label, as the page shows it.
func filterLabel(name string) string {
	if name == "since" {
		return "From"
	}
	return "To"
}
