// Package hostcpu reads how busy the machine's CPU is, from /proc/stat
// (Linux; nothing elsewhere), and this process's own CPU time: the one
// reader the load generator's reports and a race's busy-machine warning
// share.
package hostcpu
