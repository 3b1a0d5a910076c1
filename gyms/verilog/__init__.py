"""The Verilog gym: RTL design tasks checked by simulation (Icarus Verilog or Verilator,
SystemVerilog or cocotb testbenches), plus loaders for VerilogEval v2 and RTLLM 2.0.

See docs/gyms/verilog.md for the task format, the options and what each backend costs.
"""

from gyms.verilog.gym import VerilogGym

__all__ = ["VerilogGym"]
