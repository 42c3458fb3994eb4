// Package corpus is the project's corpus of recorded agent sessions:
// content-free workloads (counts and times only) that corpus/build.sh
// builds from public recordings with `agentloop workload import`, each
// attributed in attribution.tsv (its source's repository, commit, path,
// agent, model and licence) and named in its own description. It embeds
// them, loads them and describes the corpus's shape, and it re-costs a
// session's race (Recost): raced once at instant with no tool time, then
// costed arithmetically at any model speed, stack reading and tool time,
// for agentloop bench corpus.
//
// It never holds a source's file or text; corpus/README.md says what is
// in it and how to rebuild it.
package corpus
