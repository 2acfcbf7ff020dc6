# Sourced by the benchmark scripts: what names their result files and headers.
#   gpu     name of GPU 0 (nvidia-smi)         driver  its driver version
#   tag     the name as a file-name part        day     today's UTC date, YYYY-MM-DD
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader -i 0 | head -1)
tag=$(echo "$gpu" | tr -c 'A-Za-z0-9\n' '_' | sed 's/__*/_/g; s/_$//')
day=$(date -u +%Y-%m-%d)
