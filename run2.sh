# run in build-gpu/bin by gpu-check; REPO=../..
REPO=$(cd ../.. && pwd)
export REPO
timeout 200 bash $REPO/tools/bench/fused_bench.sh 2>&1 | tail -80
for r in uniform; do
timeout 150 mk-launch -n 4 -- mk-bench moe --routing $r --json $RES/moe_${r}_h200x4.json > $RES/moe_${r}.log 2>&1; echo "moe $r rc=$?"; grep -v "^\[[123]\]" $RES/moe_${r}.log | tail -14
done
