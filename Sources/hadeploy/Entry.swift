import HADeployCLI

@main
enum Entry {
    static func main() async {
        await HADeploy.main()
    }
}
