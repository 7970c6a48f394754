// Data-plane roles for one principal on the Service Bus namespace.
param namespaceName string
param principalId string
@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param principalType string
@description('Built-in role definition ids.')
param roleDefinitionIds array

resource namespace 'Microsoft.ServiceBus/namespaces@2024-01-01' existing = {
  name: namespaceName
}

resource assignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for roleId in roleDefinitionIds: {
    scope: namespace
    name: guid(namespace.id, principalId, roleId)
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
    }
  }
]
