package HeavyLib "Component library of heavygym's Modelica gym, written for the project (not the MSL)"
  constant Real pi = 3.14159265358979323846;
  annotation(Documentation(info = "Electrical, translational and rotational mechanics, thermal and signal blocks.
Units are SI throughout; flows are positive into a component."));
end HeavyLib;
