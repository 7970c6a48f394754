// Data-plane roles for one principal on one topic of the Service Bus namespace: narrower
// than servicebus-access.bicep's namespace scope (the controller sends batch events and
// may not send triggers).
param namespaceName string
param topicName string
param principalId string
@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param principalType string
@description('Built-in role definition ids.')
param roleDefinitionIds array

resource namespace 'Microsoft.ServiceBus/namespaces@2024-01-01' existing = {
  name: namespaceName
}

resource topic 'Microsoft.ServiceBus/namespaces/topics@2024-01-01' existing = {
  parent: namespace
  name: topicName
}

resource assignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for roleId in roleDefinitionIds: {
    scope: topic
    name: guid(topic.id, principalId, roleId)
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
    }
  }
]
