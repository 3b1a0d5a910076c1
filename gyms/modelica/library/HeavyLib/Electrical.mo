within HeavyLib;
package Electrical "Analog circuits: pins, one-ports, sources, sensors"
  connector Pin "An electrical pin"
    Real v "Potential (V)";
    flow Real i "Current into the pin (A)";
  end Pin;

  partial model OnePort "Two pins, one current through, one voltage across"
    Pin p "Positive pin";
    Pin n "Negative pin";
    Real v "Voltage drop p.v - n.v (V)";
    Real i "Current from p through the component to n (A)";
  equation
    v = p.v - n.v;
    0 = p.i + n.i;
    i = p.i;
  end OnePort;

  model Ground "Zero potential"
    Pin p;
  equation
    p.v = 0;
  end Ground;

  model Resistor "v = R*i"
    extends OnePort;
    parameter Real R = 1 "Resistance (Ohm)";
  equation
    v = R*i;
  end Resistor;

  model Capacitor "i = C*der(v)"
    extends OnePort;
    parameter Real C = 1 "Capacitance (F)";
  equation
    i = C*der(v);
  end Capacitor;

  model Inductor "L*der(i) = v"
    extends OnePort;
    parameter Real L = 1 "Inductance (H)";
  equation
    L*der(i) = v;
  end Inductor;

  model Diode "Exponential diode: i = Ids*(exp(v/Vt) - 1)"
    extends OnePort;
    parameter Real Ids = 1e-6 "Saturation current (A)";
    parameter Real Vt = 0.04 "Thermal voltage (V)";
  equation
    i = Ids*(exp(v/Vt) - 1);
  end Diode;

  model HeatingResistor "Resistor whose losses heat a port; R depends linearly on temperature"
    extends OnePort;
    parameter Real R_ref = 1 "Resistance at T_ref (Ohm)";
    parameter Real T_ref = 293.15 "Reference temperature (K)";
    parameter Real alpha = 0 "Temperature coefficient (1/K)";
    Real R "Actual resistance (Ohm)";
    HeavyLib.Thermal.HeatPort heatPort;
  equation
    R = R_ref*(1 + alpha*(heatPort.T - T_ref));
    v = R*i;
    heatPort.Q_flow = -v*i;
  end HeatingResistor;

  model ConstantVoltage "v = V"
    extends OnePort;
    parameter Real V = 1 "Voltage (V)";
  equation
    v = V;
  end ConstantVoltage;

  model StepVoltage "v = V from startTime on, 0 before"
    extends OnePort;
    parameter Real V = 1 "Voltage after the step (V)";
    parameter Real startTime = 0 "Time of the step (s)";
  equation
    v = if time < startTime then 0 else V;
  end StepVoltage;

  model SineVoltage "v = offset + V*sin(2*pi*f*time)"
    extends OnePort;
    parameter Real V = 1 "Amplitude (V)";
    parameter Real f = 1 "Frequency (Hz)";
    parameter Real offset = 0 "Offset (V)";
  equation
    v = offset + V*sin(2*HeavyLib.pi*f*time);
  end SineVoltage;

  model SignalVoltage "v = u, from a signal input"
    extends OnePort;
    HeavyLib.Blocks.RealInput u "Voltage (V)";
  equation
    v = u;
  end SignalVoltage;

  model ConstantCurrent "i = I"
    extends OnePort;
    parameter Real I = 1 "Current (A)";
  equation
    i = I;
  end ConstantCurrent;

  model VoltageSensor "Measures p.v - n.v; draws no current"
    Pin p;
    Pin n;
    HeavyLib.Blocks.RealOutput v "Voltage (V)";
  equation
    p.i = 0;
    n.i = 0;
    v = p.v - n.v;
  end VoltageSensor;

  model CurrentSensor "Measures the current from p to n; no voltage drop"
    Pin p;
    Pin n;
    HeavyLib.Blocks.RealOutput i "Current (A)";
  equation
    p.v = n.v;
    0 = p.i + n.i;
    i = p.i;
  end CurrentSensor;

  model EMF "Ideal electro-mechanical converter: v = k*w, flange torque = k*i"
    Pin p;
    Pin n;
    HeavyLib.Rotational.Flange flange "Shaft";
    parameter Real k = 1 "Motor constant (V.s/rad = N.m/A)";
    Real v "Voltage (V)";
    Real i "Current (A)";
    Real w "Shaft speed (rad/s)";
  equation
    v = p.v - n.v;
    0 = p.i + n.i;
    i = p.i;
    w = der(flange.phi);
    v = k*w;
    flange.tau = -k*i;
  end EMF;
end Electrical;
