// Data-plane roles for one principal on one blob container: narrower than
// storage-access.bicep's account scope (a role reads or writes only the containers its
// code uses). A user delegation key is the account's, so the role that signs upload grants
// is given on the account (storage-access.bicep), never here.
param accountName string
param containerName string
param principalId string
@allowed([ 'User', 'ServicePrincipal', 'Group' ])
param principalType string
@description('Built-in role definition ids.')
param roleDefinitionIds array

resource account 'Microsoft.Storage/storageAccounts@2025-01-01' existing = {
  name: accountName
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2025-01-01' existing = {
  parent: account
  name: 'default'
}

resource container 'Microsoft.Storage/storageAccounts/blobServices/containers@2025-01-01' existing = {
  parent: blobService
  name: containerName
}

resource assignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for roleId in roleDefinitionIds: {
    scope: container
    name: guid(container.id, principalId, roleId)
    properties: {
      principalId: principalId
      principalType: principalType
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roleId)
    }
  }
]
