# Sourced by the benchmark scripts. Keeps the CPUs out of their idle halt while the figures are
# taken, by holding a PM QoS request of zero wake-up latency on /dev/cpu_dma_latency for as long
# as the script runs (the kernel drops it when the file closes).
#
# Why: on this project's VMs (cpuidle driver `haltpoll`, guest_halt_poll_ns 0) an idle vCPU halts
# to the host, and each wake-up then costs tens of microseconds. A bare echo loop over pipes took
# 69 µs per round trip on an idle machine and 7.7 µs with this request held (6–7 µs while other
# builds kept the CPUs busy), so without it, stdio round trips measure the hypervisor, and they
# improve when the machine is busier. The request costs nothing but the idle CPUs' power.
# Needs write access to /dev/cpu_dma_latency (root); otherwise the figures are taken as they come
# and the script says so.
hold_cpus_awake() {
  if { exec {cpu_latency_fd}>/dev/cpu_dma_latency; } 2>/dev/null; then
    printf '\x00\x00\x00\x00' >&"$cpu_latency_fd"
    echo "== CPUs held awake (PM QoS latency 0 on /dev/cpu_dma_latency; idle driver: $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null || echo unknown))"
  else
    echo "== CPUs NOT held awake (/dev/cpu_dma_latency is not writable): round trips include idle wake-ups"
  fi
}
