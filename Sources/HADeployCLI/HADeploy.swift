import ArgumentParser

public struct HADeploy: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(commandName: "hadeploy")
    public init() {}
    public func run() async throws {}
}
