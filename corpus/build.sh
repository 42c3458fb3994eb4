#!/bin/sh
# build.sh rebuilds the corpus (docs in corpus/README.md) from a clone of each
# source, read at its pinned commit with git (a checkout or a bare clone):
#
#   git clone https://github.com/laude-institute/terminal-bench-leaderboard /src/tbench
#   git clone https://github.com/SWE-agent/SWE-agent /src/swe-agent
#   corpus/build.sh /src/tbench /src/swe-agent
#
# Run it from the repository's root. It writes one workload a recording
# (counts and times only: agentloop workload import) and attribution.tsv,
# and never copies a source's file.
set -eu

TBENCH=$1
SWEAGENT=$2
TBENCH_COMMIT=8e1925a397d7ed859c027cc19b3a3d90c16ef8df
SWEAGENT_COMMIT=3ea751c087f32b16e039a2233dd6eefecef325d5
TBENCH_RUN=results/terminal-bench-core@0.1.1/20250825_swe-agent-mini_claude-4-sonnet
NOLICENCE="no licence; derived counts only; removed on request"

out=corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/agentloop" ./cmd/agentloop

rm -rf "$out/terminal-bench-mini-swe-agent" "$out/swe-agent"
mkdir -p "$out/terminal-bench-mini-swe-agent" "$out/swe-agent"
printf 'workload\trepository\tcommit\tpath\tagent\tmodel\tlicence\n' > "$out/attribution.tsv"

# terminal-bench-leaderboard: asciinema recordings of mini-swe-agent 1.7.0
# with claude-sonnet-4. A trial whose recording holds no mini-swe-agent
# session (the agent never started) is skipped, and counted.
skipped=0
git -C "$TBENCH" ls-tree -r --name-only "$TBENCH_COMMIT" "$TBENCH_RUN" | grep '/sessions/agent\.cast$' | sort > "$tmp/casts"
while read -r path; do
	trial=$(basename "$(dirname "$(dirname "$path")")")
	git -C "$TBENCH" show "$TBENCH_COMMIT:$path" > "$tmp/recording"
	file="$out/terminal-bench-mini-swe-agent/$trial.json"
	if "$tmp/agentloop" workload import --from asciinema-mini-swe-agent \
		--description "terminal-bench-leaderboard trial $trial" -o "$file" "$tmp/recording" 2>> "$tmp/errors"; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" laude-institute/terminal-bench-leaderboard "$TBENCH_COMMIT" "$path" \
			"mini-swe-agent 1.7.0" "anthropic/claude-sonnet-4-20250514" "$NOLICENCE" >> "$out/attribution.tsv"
	else
		rm -f "$file"
		skipped=$((skipped + 1))
	fi
done < "$tmp/casts"
echo "terminal-bench-leaderboard: $(ls "$out/terminal-bench-mini-swe-agent" | wc -l) sessions, $skipped recordings skipped" >&2

# SWE-agent (MIT): the .traj trajectories it ships (demonstrations and test data).
git -C "$SWEAGENT" ls-tree -r --name-only "$SWEAGENT_COMMIT" | grep '\.traj$' | sort > "$tmp/trajs"
while read -r path; do
	name=$(basename "$(dirname "$path")")__$(basename "$path" .traj)
	git -C "$SWEAGENT" show "$SWEAGENT_COMMIT:$path" > "$tmp/recording"
	file="$out/swe-agent/$name.json"
	model="not recorded in the file"
	case "$path" in *gpt4*) model="gpt-4 (by its directory's name)" ;; esac
	"$tmp/agentloop" workload import --from swe-agent --description "SWE-agent/SWE-agent $path" -o "$file" "$tmp/recording"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$file" SWE-agent/SWE-agent "$SWEAGENT_COMMIT" "$path" \
		"SWE-agent" "$model" "MIT (its LICENSE)" >> "$out/attribution.tsv"
done < "$tmp/trajs"
echo "SWE-agent: $(ls "$out/swe-agent" | wc -l) sessions" >&2
