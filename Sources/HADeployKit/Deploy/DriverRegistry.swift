import DeviceSpec
import Foundation
import HADeployCore

/// Picks the driver for each device from its transport and this host.
public struct DriverRegistry: Sendable {
    public var matrix: DeviceMatrix
    public var variables: [String: String]
    public var host: HostPlatform
    /// `USBMUXD_SOCKET_ADDRESS` for USB devices (virtual devices, or a forwarded remote usbmuxd).
    public var usbmuxdAddress: String?
    public var stateDirectory: URL
    public var output: any OutputSink

    public init(
        matrix: DeviceMatrix, variables: [String: String], host: HostPlatform, usbmuxdAddress: String?,
        stateDirectory: URL, output: any OutputSink
    ) {
        self.matrix = matrix
        self.variables = variables
        self.host = host
        self.usbmuxdAddress = usbmuxdAddress
        self.stateDirectory = stateDirectory
        self.output = output
    }

    public func driver(for plan: DevicePlan) throws -> any DeviceDriver {
        throw TransportUnavailable(
            device: plan.name, transport: plan.transport.rawValue,
            reason: "this transport is not wired into this build of hadeploy yet")
    }
}
