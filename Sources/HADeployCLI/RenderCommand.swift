import ArgumentParser
import Foundation
import HADeployCore
import HADeployKit
import Templating

struct RenderCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Render every Templates/**/*.mustache with values from .env and the environment.",
        discussion: """
            Output files keep the template's path without `.mustache`, written atomically
            and only when their content changed. Examples:
              hadeploy render                     Templates/ → Generated/
              hadeploy render --env-file ci.env --out .
              hadeploy render --check             exit 1 if anything would change (CI)
            """)

    @Option(name: .customLong("env-file"), help: ArgumentHelp("Values for the templates.", valueName: "path"))
    var envFile: String = ".env"

    @Option(name: .long, help: ArgumentHelp("Templates directory.", valueName: "dir"))
    var templates: String = "Templates"

    @Option(name: .long, help: ArgumentHelp("Output directory.", valueName: "dir"))
    var out: String = "Generated"

    @Flag(name: .long, help: "Write nothing; exit 1 if any output would change.")
    var check = false

    func run(_ context: HADeployContext) async throws {
        let workspace = Workspace(context: context, configPath: "devices.yaml", envFilePath: envFile)
        let (values, _) = try workspace.loadVariables()
        let renderer = TemplateRenderer(
            fileSystem: context.fileSystem,
            templatesDirectory: context.url(for: templates), displayRoot: context.currentDirectory)
        let files = try renderer.render(values: values, envFileName: envFile)
        let writer = FileWriter(fileSystem: context.fileSystem)
        let outDirectory = context.url(for: out)
        var changed: [String] = []
        for file in files {
            let url = outDirectory.appendingPathComponent(file.relativePath)
            let data = Data(file.contents.utf8)
            let display = (out as NSString).appendingPathComponent(file.relativePath)
            if check {
                let outcome = writer.outcome(writing: data, to: url)
                if outcome != .unchanged {
                    changed.append(display)
                    context.message("\(display): would be \(outcome.rawValue)")
                }
            } else {
                let outcome = try writer.write(data, to: url)
                context.message("\(display): \(outcome.rawValue)")
            }
        }
        if check {
            if changed.isEmpty {
                context.message("\(files.count) file(s) up to date")
            } else {
                context.message("\(changed.count) file(s) out of date: run `hadeploy render`")
                throw ExitCode(ExitStatus.failure.rawValue)
            }
        }
    }
}
