within HeavyLib;
package Translational "1-D translational mechanics: flanges, masses, springs, dampers, forces"
  connector Flange "A translational flange"
    Real s "Position (m)";
    flow Real f "Force into the flange (N)";
  end Flange;

  model Fixed "Flange held at a fixed position"
    Flange flange;
    parameter Real s0 = 0 "Position (m)";
  equation
    flange.s = s0;
  end Fixed;

  model Mass "m*der(v) = sum of flange forces"
    Flange flange_a;
    Flange flange_b;
    parameter Real m = 1 "Mass (kg)";
    Real s "Position (m)";
    Real v "Velocity (m/s)";
    Real a "Acceleration (m/s2)";
  equation
    s = flange_a.s;
    s = flange_b.s;
    v = der(s);
    a = der(v);
    m*a = flange_a.f + flange_b.f;
  end Mass;

  partial model Compliant "Relative position and a force passed through"
    Flange flange_a;
    Flange flange_b;
    Real s_rel "flange_b.s - flange_a.s (m)";
    Real f "Force from flange_a to flange_b (N)";
  equation
    s_rel = flange_b.s - flange_a.s;
    flange_b.f = f;
    flange_a.f = -f;
  end Compliant;

  model Spring "f = c*(s_rel - s_rel0)"
    extends Compliant;
    parameter Real c = 1 "Stiffness (N/m)";
    parameter Real s_rel0 = 0 "Unstretched length (m)";
  equation
    f = c*(s_rel - s_rel0);
  end Spring;

  model Damper "f = d*der(s_rel)"
    extends Compliant;
    parameter Real d = 1 "Damping (N.s/m)";
  equation
    f = d*der(s_rel);
  end Damper;

  model Force "Drives the flange with the force of a signal input"
    Flange flange;
    HeavyLib.Blocks.RealInput f "Force (N)";
  equation
    flange.f = -f;
  end Force;

  model ConstantForce "Drives the flange with a constant force"
    Flange flange;
    parameter Real f_constant = 1 "Force (N)";
  equation
    flange.f = -f_constant;
  end ConstantForce;

  model PositionSensor "Measures flange.s"
    Flange flange;
    HeavyLib.Blocks.RealOutput s "Position (m)";
  equation
    flange.f = 0;
    s = flange.s;
  end PositionSensor;

  model SpeedSensor "Measures der(flange.s)"
    Flange flange;
    HeavyLib.Blocks.RealOutput v "Velocity (m/s)";
  equation
    flange.f = 0;
    v = der(flange.s);
  end SpeedSensor;
end Translational;
