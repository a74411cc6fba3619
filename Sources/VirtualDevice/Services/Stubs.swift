import Foundation

public struct HomeAssistantDashboardBehaviour: VirtualAppBehaviour {
    public init() {}
    public func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {}
}
