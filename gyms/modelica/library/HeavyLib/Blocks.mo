within HeavyLib;
package Blocks "Signal blocks: sources, math, continuous and nonlinear blocks"
  connector RealInput = input Real "A signal input";
  connector RealOutput = output Real "A signal output";

  partial block SO "A block with one output"
    RealOutput y;
  end SO;

  partial block SISO "A block with one input and one output"
    RealInput u;
    RealOutput y;
  end SISO;

  block Constant "y = k"
    extends SO;
    parameter Real k = 1;
  equation
    y = k;
  end Constant;

  block Step "y = offset, plus height from startTime on"
    extends SO;
    parameter Real height = 1;
    parameter Real offset = 0;
    parameter Real startTime = 0;
  equation
    y = offset + (if time < startTime then 0 else height);
  end Step;

  block Ramp "Rises linearly by height over duration, from startTime on"
    extends SO;
    parameter Real height = 1;
    parameter Real duration = 1;
    parameter Real offset = 0;
    parameter Real startTime = 0;
  equation
    y = offset + (if time < startTime then 0
                  elseif time < startTime + duration then height*(time - startTime)/duration
                  else height);
  end Ramp;

  block Sine "y = offset + amplitude*sin(2*pi*f*time + phase)"
    extends SO;
    parameter Real amplitude = 1;
    parameter Real f = 1 "Frequency (Hz)";
    parameter Real phase = 0 "Phase (rad)";
    parameter Real offset = 0;
  equation
    y = offset + amplitude*sin(2*HeavyLib.pi*f*time + phase);
  end Sine;

  block Gain "y = k*u"
    extends SISO;
    parameter Real k = 1;
  equation
    y = k*u;
  end Gain;

  block Feedback "y = u1 - u2"
    RealInput u1;
    RealInput u2;
    RealOutput y;
  equation
    y = u1 - u2;
  end Feedback;

  block Add "y = k1*u1 + k2*u2"
    RealInput u1;
    RealInput u2;
    RealOutput y;
    parameter Real k1 = 1;
    parameter Real k2 = 1;
  equation
    y = k1*u1 + k2*u2;
  end Add;

  block Integrator "der(y) = k*u"
    extends SISO;
    parameter Real k = 1;
    parameter Real y_start = 0;
  initial equation
    y = y_start;
  equation
    der(y) = k*u;
  end Integrator;

  block FirstOrder "T*der(y) + y = k*u"
    extends SISO;
    parameter Real k = 1;
    parameter Real T = 1 "Time constant (s)";
    parameter Real y_start = 0;
  initial equation
    y = y_start;
  equation
    T*der(y) + y = k*u;
  end FirstOrder;

  block PI "Proportional-integral controller: y = k*(u + x), der(x) = u/T"
    extends SISO;
    parameter Real k = 1 "Gain";
    parameter Real T = 1 "Integral time (s)";
    parameter Real x_start = 0;
    Real x "Integrator state";
  initial equation
    x = x_start;
  equation
    der(x) = u/T;
    y = k*(u + x);
  end PI;

  block Limiter "Clamps u to [uMin, uMax]"
    extends SISO;
    parameter Real uMax = 1;
    parameter Real uMin = -uMax;
  equation
    y = if u > uMax then uMax elseif u < uMin then uMin else u;
  end Limiter;
end Blocks;
