package bench

import "sync"

// maxErrorSamples is how many failures' messages a report keeps.
const maxErrorSamples = 3

// failureCounter returns a func, safe for concurrent use, that counts a
// failure in *count and keeps the first messages in *samples.
func failureCounter(count *int, samples *[]string) func(error) {
	var mu sync.Mutex
	return func(err error) {
		mu.Lock()
		defer mu.Unlock()
		*count++
		if len(*samples) < maxErrorSamples {
			*samples = append(*samples, err.Error())
		}
	}
}
