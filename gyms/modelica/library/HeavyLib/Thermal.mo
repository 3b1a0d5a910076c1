within HeavyLib;
package Thermal "Lumped heat transfer: heat ports, capacitors, conductors, sources"
  connector HeatPort "A thermal port"
    Real T "Temperature (K)";
    flow Real Q_flow "Heat flow into the component (W)";
  end HeatPort;

  model HeatCapacitor "C*der(T) = heat flowing in"
    HeatPort port;
    parameter Real C = 1 "Heat capacity (J/K)";
    Real T "Temperature (K)";
  equation
    T = port.T;
    C*der(T) = port.Q_flow;
  end HeatCapacitor;

  model ThermalConductor "Q_flow = G*(port_a.T - port_b.T)"
    HeatPort port_a;
    HeatPort port_b;
    parameter Real G = 1 "Thermal conductance (W/K)";
    Real Q_flow "Heat flow from port_a to port_b (W)";
    Real dT "port_a.T - port_b.T (K)";
  equation
    dT = port_a.T - port_b.T;
    Q_flow = G*dT;
    port_a.Q_flow = Q_flow;
    port_b.Q_flow = -Q_flow;
  end ThermalConductor;

  model FixedTemperature "Holds the port at temperature T"
    HeatPort port;
    parameter Real T = 293.15 "Temperature (K)";
  equation
    port.T = T;
  end FixedTemperature;

  model FixedHeatFlow "Feeds a constant heat flow into the connected component"
    HeatPort port;
    parameter Real Q_flow = 1 "Heat flow (W)";
  equation
    port.Q_flow = -Q_flow;
  end FixedHeatFlow;

  model PrescribedHeatFlow "Feeds the heat flow of a signal input into the connected component"
    HeatPort port;
    HeavyLib.Blocks.RealInput Q_flow "Heat flow (W)";
  equation
    port.Q_flow = -Q_flow;
  end PrescribedHeatFlow;

  model TemperatureSensor "Measures port.T"
    HeatPort port;
    HeavyLib.Blocks.RealOutput T "Temperature (K)";
  equation
    port.Q_flow = 0;
    T = port.T;
  end TemperatureSensor;
end Thermal;
