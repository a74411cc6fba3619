import HADeployCLI

await HADeploy.main()
