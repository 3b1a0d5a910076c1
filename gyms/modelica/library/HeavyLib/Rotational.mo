within HeavyLib;
package Rotational "1-D rotational mechanics: flanges, inertias, springs, dampers, torques"
  connector Flange "A rotational flange"
    Real phi "Absolute angle (rad)";
    flow Real tau "Torque into the flange (N.m)";
  end Flange;

  model Fixed "Flange held at a fixed angle"
    Flange flange;
    parameter Real phi0 = 0 "Angle (rad)";
  equation
    flange.phi = phi0;
  end Fixed;

  model Inertia "J*der(w) = sum of flange torques"
    Flange flange_a;
    Flange flange_b;
    parameter Real J = 1 "Moment of inertia (kg.m2)";
    Real phi "Angle (rad)";
    Real w "Speed (rad/s)";
    Real a "Acceleration (rad/s2)";
  equation
    phi = flange_a.phi;
    phi = flange_b.phi;
    w = der(phi);
    a = der(w);
    J*a = flange_a.tau + flange_b.tau;
  end Inertia;

  partial model Compliant "Relative angle and a torque passed through"
    Flange flange_a;
    Flange flange_b;
    Real phi_rel "flange_b.phi - flange_a.phi (rad)";
    Real tau "Torque from flange_a to flange_b (N.m)";
  equation
    phi_rel = flange_b.phi - flange_a.phi;
    flange_b.tau = tau;
    flange_a.tau = -tau;
  end Compliant;

  model Spring "tau = c*(phi_rel - phi_rel0)"
    extends Compliant;
    parameter Real c = 1 "Stiffness (N.m/rad)";
    parameter Real phi_rel0 = 0 "Unstretched angle (rad)";
  equation
    tau = c*(phi_rel - phi_rel0);
  end Spring;

  model Damper "tau = d*der(phi_rel)"
    extends Compliant;
    parameter Real d = 1 "Damping (N.m.s/rad)";
  equation
    tau = d*der(phi_rel);
  end Damper;

  model Torque "Drives the flange with the torque of a signal input"
    Flange flange;
    HeavyLib.Blocks.RealInput tau "Torque (N.m)";
  equation
    flange.tau = -tau;
  end Torque;

  model ConstantTorque "Drives the flange with a constant torque"
    Flange flange;
    parameter Real tau_constant = 1 "Torque (N.m)";
  equation
    flange.tau = -tau_constant;
  end ConstantTorque;

  model SpeedSensor "Measures der(flange.phi)"
    Flange flange;
    HeavyLib.Blocks.RealOutput w "Speed (rad/s)";
  equation
    flange.tau = 0;
    w = der(flange.phi);
  end SpeedSensor;

  model AngleSensor "Measures flange.phi"
    Flange flange;
    HeavyLib.Blocks.RealOutput phi "Angle (rad)";
  equation
    flange.tau = 0;
    phi = flange.phi;
  end AngleSensor;
end Rotational;
