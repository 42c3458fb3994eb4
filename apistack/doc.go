// Package apistack is agentloop's cost model of a hosted API's stack around
// the model: the parameters of the stack_* stages, their presets and
// readings, and the one function that costs a stage's work. The wire
// names it costs (the X-Agentloop-Stack header, the stack_* span names)
// are api's.
package apistack
