// Data-plane roles for one principal on the storage account.
param accountName string
param principalId string
@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param principalType string
@description('Built-in role definition ids.')
param roleDefinitionIds array

resource account 'Microsoft.Storage/storageAccounts@2025-01-01' existing = {
  name: accountName
}

resource assignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for roleId in roleDefinitionIds: {
    scope: account
    name: guid(account.id, principalId, roleId)
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
    }
  }
]
