// The registry azd pushes the image to (built remotely: docker.remoteBuild in azure.yaml).
// The apps pull with their identities (AcrPull); no admin user.
param name string
param location string
param tags object
param pullerPrincipalIds array

var acrPull = '7f951dda-4ed3-4680-a7ca-43fe172d538d'

resource registry 'Microsoft.ContainerRegistry/registries@2025-04-01' = {
  name: name
  location: location
  tags: tags
  sku: { name: 'Basic' }
  properties: {
    adminUserEnabled: false
    anonymousPullEnabled: false
  }
}

resource pull 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for principalId in pullerPrincipalIds: {
    scope: registry
    name: guid(registry.id, principalId, acrPull)
    properties: {
      principalId: principalId
      principalType: 'ServicePrincipal'
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', acrPull)
    }
  }
]

output name string = registry.name
output loginServer string = registry.properties.loginServer
